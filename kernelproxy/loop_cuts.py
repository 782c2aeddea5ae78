"""Cutting a loop with no sync point into stretches that repeat (issue 50).

A *stretch* is the ops between two sync points (docs/stretch-replay.md). A loop with no
read in its body — ``for _ in range(200): v = 0.9 * v + 0.1 * (0.5 - u); u = u + 0.05 * v``,
one read after it — is one long stretch, sent in batches cut by size (the session's early
batches: 8, 16, ... ops), which never repeat, so it is never replayed. Once a stretch with
no sync point has grown to ``DETECT_OPS`` ops, :func:`piece_of` looks at its ops (their
kinds and names, as its key has them) for a period: the shortest ``P`` of at most
``MAX_PERIOD`` ops with which the last ``WINDOW`` ops repeat. Found, the session cuts the
stretch before the op the loop's least rotation begins with (:func:`first_of_rotation`:
the same op each time the loop runs, wherever its period was found) and then after every
*piece* of ``P * m`` ops (at least ``MIN_PIECE_OPS``,
so that one replay stands for enough ops), each cut ending the stretch as a sync point
would, without waiting for anything (kernelproxy.session). The pieces repeat: they are
offered, held and answered from their templates as any stretch, their inputs the arrays
the piece before made. The cutting ends at the next sync point.

A period found where there is none only cuts batches where the session would have sent
them early anyway: a piece whose ops differ is another key, never a wrong replay.
"""

from __future__ import annotations

from typing import Any


from .stretch_key import StretchKey

__all__ = ["BIG_ARRAY_BYTES", "DETECT_OPS", "MAX_PERIOD", "MIN_PIECE_OPS", "WINDOW", "PIECES_AHEAD",
           "AWAITS", "LoopCuts", "period_of", "piece_of", "first_of_rotation"]

#: A stretch with no sync point is looked at for a period once it holds this many ops.
DETECT_OPS = 96
#: The longest loop body (in ops) looked for.
MAX_PERIOD = 32
#: The last ops that must repeat with the period (at least two periods of it).
WINDOW = 64
#: A piece holds whole periods, at least this many ops.
MIN_PIECE_OPS = 32
#: A piece whose template (the worker's answer to its offer) has an input this large is let
#: go, never replayed (kernelproxy/stretch_replay.py): its ops are the device's time (~10 µs
#: each on an H200 from here, far more at 64 MiB), which a replay does not shorten, while each
#: replay copies its inputs into its graph's buffers and its results out (2^24 float32
#: elements, an H200, runs 29 and 31: 1.04-1.10x local replayed, 1.01-1.03x not), and a held
#: piece's graph keeps every temporary its ops made. (The cut is made before sizes are known
#: on the client: a loop's arrays from before it are mostly dropped, and its results'
#: metadata comes later.)
BIG_ARRAY_BYTES = 16 << 20
#: A loop cut into pieces runs at most this many pieces' batches ahead of the worker's
#: answers: the reply that says a piece is held (and the metadata its template needs) is
#: read within so many pieces, on a slow worker too, and the batches kept for a move to
#: another worker stay bounded (local CuPy's launch queue bounds its run ahead likewise).
PIECES_AHEAD = 4
#: A loop's cuts wait for every answer, so that the next piece's inputs have their
#: metadata and it can be answered from its template, at most this many times a loop
#: (where a template exists and the piece before was not answered from one).
AWAITS = 3


def period_of(names: list) -> int | None:
    """The shortest period ``P <= MAX_PERIOD`` with which the last ``WINDOW`` entries of
    *names* repeat (``names[i] == names[i - P]``, with at least two periods seen), or None."""
    n = len(names)
    for period in range(1, MAX_PERIOD + 1):
        seen = min(WINDOW, n - period)
        if seen < 2 * period:
            return None
        last = n - 1
        if all(names[last - k] == names[last - k - period] for k in range(seen)):
            return period
    return None


def first_of_rotation(body: list) -> int:
    """Where the least rotation of *body* (compared by each entry's repr) begins: the op a
    piece of the loop starts with, wherever in the loop its period was found, so that each
    run of the loop is cut into the same pieces (the same keys, held once)."""
    texts = [repr(entry) for entry in body]
    return min(range(len(texts)), key=lambda r: texts[r:] + texts[:r])


def piece_of(stretch: StretchKey) -> tuple[int, int] | None:
    """How to cut the loop that *stretch* (no sync point in it yet) is running: the ops a
    piece holds, and how many ops from now the first piece begins; None where its ops do
    not repeat. Its key's records name each op (its kind, what it gives, its callable);
    free records are left out."""
    names = [record[:3] for record in stretch.records if record[0] != "free"]
    period = period_of(names)
    if period is None:
        return None
    # (the next op is the period's first, names[-period]: the piece begins r ops on)
    return period * -(-MIN_PIECE_OPS // period), first_of_rotation(names[-period:])


class LoopCuts:
    """A session's cutting of a loop with no sync point into pieces (the session's own
    state for it, apart from its batching): where the current piece ends (``cut_at``, the
    number of its last op; None: not cutting), a piece's ops, whether this stretch was
    looked at, whether a cut is ending a stretch now, the waits for metadata left, and
    whether the stretch under way is a piece (not the one the loop was found in)."""

    __slots__ = ("session", "cut_at", "piece", "looked", "cutting", "awaits", "in_piece")

    def __init__(self, session: Any) -> None:
        self.session = session
        self.cut_at: int | None = None
        self.piece = 0
        self.looked = False
        self.cutting = False
        self.awaits = 0
        self.in_piece = False

    def look(self) -> bool:
        """The stretch queued has no sync point and DETECT_OPS ops: if they repeat, cut it
        before the op its least rotation begins with, and after each piece from then on.
        Looked at once a stretch. Whether the loop is being cut."""
        self.looked = True
        session = self.session
        if session.blocking:
            return False
        found = piece_of(session.stretches.current)
        if found is None:
            return False
        self.piece, first = found
        self.cut_at = session._seq + first   # (the op after that one cuts: cut)
        self.awaits = AWAITS
        return True

    def cut(self) -> None:
        """End the stretch here as a sync point would, waiting for nothing: its ops (or the
        run answered from its template, as its replay) go now; the next piece begins. Made
        as the op after a piece's last is submitted, so that the arrays the last op's caller
        dropped as it rebound a name are freed in the piece, as in every piece."""
        session = self.session
        stretches = session.stretches
        answered_here = session._run is not None
        if self.in_piece and stretches is not None:   # (not the stretch the loop was found in)
            stretches.current.piece = True
        self.in_piece = True
        self.cutting = True
        try:
            session.flush()
        finally:
            self.cutting = False
        self.cut_at = session._seq + self.piece
        session._wait_all_but(PIECES_AHEAD)   # (see PIECES_AHEAD)
        if self.awaits and not answered_here and stretches.templates:
            # a piece answered from its template needs its inputs' metadata (the last
            # piece's results); with no sync point, their replies lag behind: wait for them
            # (AWAITS times at most a loop), after which each piece answered from its
            # template gives its results its template's
            self.awaits -= 1
            session._wait_all()
            session._may_start = True   # (the templates may have come with these replies)

    def stop(self) -> None:
        """The cutting ends: at a sync point (the stretch begins anew), or where a piece
        missed its template (where its period begins is lost: the loop is looked for anew,
        to be cut where it was)."""
        self.cut_at = None
        self.in_piece = False
        self.looked = False
