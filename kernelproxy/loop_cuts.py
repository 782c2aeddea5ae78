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

from .stretch_key import StretchKey

__all__ = ["BIG_ARRAY_BYTES", "DETECT_OPS", "MAX_PERIOD", "MIN_PIECE_OPS", "WINDOW", "period_of",
           "piece_of", "first_of_rotation"]

#: A stretch with no sync point is looked at for a period once it holds this many ops.
DETECT_OPS = 96
#: The longest loop body (in ops) looked for.
MAX_PERIOD = 32
#: The last ops that must repeat with the period (at least two periods of it).
WINDOW = 64
#: A piece holds whole periods, at least this many ops.
MIN_PIECE_OPS = 32
#: Where the loop's largest input is this large, it is not cut: its ops are the device's
#: time (~10 µs each on an H200 from here, far more at 64 MiB), which a replay does not
#: shorten, while each replay copies its inputs into its graph's buffers and its results out
#: (2^24 float32 elements, an H200, run 29: 1.06-1.10x local cut into one-period pieces,
#: 1.01-1.03x uncut), and a held piece's graph keeps every temporary its ops made.
BIG_ARRAY_BYTES = 16 << 20


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


def piece_of(stretch: StretchKey, largest: int = 0) -> tuple[int, int] | None:
    """How to cut the loop that *stretch* (no sync point in it yet) is running: the ops a
    piece holds, and how many ops from now the first piece begins; None where its ops do
    not repeat. Its key's records name each op (its kind, what it gives, its callable);
    free records are left out. *largest*: the bytes of its largest input known; from
    BIG_ARRAY_BYTES on, None (see there)."""
    if largest >= BIG_ARRAY_BYTES:
        return None
    names = [record[:3] for record in stretch.records if record[0] != "free"]
    period = period_of(names)
    if period is None:
        return None
    # (the next op is the period's first, names[-period]: the piece begins r ops on)
    return period * -(-MIN_PIECE_OPS // period), first_of_rotation(names[-period:])
