"""Finding a loop's period in a stretch with no sync point (kernelproxy/loop_cuts.py): the
shortest period the last ops repeat with, and the piece a session cuts the loop into.
The sessions' side (a loop with no read answered from templates) is in
test_stretch_fast_path.py."""

from __future__ import annotations

import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from kernelproxy.loop_cuts import (MAX_PERIOD, MIN_PIECE_OPS, WINDOW, first_of_rotation, period_of,
                                   piece_of)
from kernelproxy.stretch_key import StretchKey
from kernelproxy.stretch_replay import PIECE_REPEATS, StretchReplay
from gpu_backend.protocol.stretches import REPEATS


@pytest.mark.parametrize("period", [1, 2, 3, 6, 7, 16, MAX_PERIOD])
def test_a_body_repeated_after_a_prologue_has_its_period(period):
    body = [f"op{k}" for k in range(period)]
    names = ["setup", "more setup"] + body * (WINDOW // period + 3)
    assert period_of(names) == period


def test_the_shortest_period_is_found():
    assert period_of(["a", "b"] * 40) == 2
    assert period_of(["a"] * 80) == 1


@pytest.mark.parametrize("names", [
    [f"op{k}" for k in range(100)],                    # nothing repeats
    ["a", "b", "c"] * 30 + ["d"],                       # the last op breaks the period
    [f"op{k}" for k in range(MAX_PERIOD + 1)] * 4,     # a body longer than MAX_PERIOD
    ["a", "b"] * 2,                                    # too few ops to tell
])
def test_no_period_where_the_last_ops_do_not_repeat(names):
    assert period_of(names) is None


def _key(names: list[str], frees_every: int = 0) -> StretchKey:
    key = StretchKey(lambda obj: getattr(obj, "_h", None))
    for n, name in enumerate(names):
        key.add_op(m.KIND_FUNCTION, api.ARRAY, 1000 + n, name, None, (8,), {})
        if frees_every and n % frees_every == 0:
            key.add_free(1000 + n)
    return key


@pytest.mark.parametrize("period", [1, 5, 6, 31])
def test_a_piece_holds_whole_periods_and_at_least_min_piece_ops(period):
    body = [f"f{k}" for k in range(period)]
    found = piece_of(_key(body * (100 // period + 2), frees_every=3))   # (frees left out)
    assert found is not None
    piece, first = found
    assert piece % period == 0 and 0 <= first < period
    assert MIN_PIECE_OPS <= piece < MIN_PIECE_OPS + period


def test_no_piece_for_ops_that_do_not_repeat():
    assert piece_of(_key([f"f{k}" for k in range(100)])) is None


@pytest.mark.parametrize("body", [["mul", "sub", "mul", "add", "mul", "add"], ["f"],
                                  ["a", "b", "a", "c"], [("o", "a", "mul"), ("o", "a", None)]])
def test_every_rotation_of_a_body_begins_its_pieces_at_the_same_op(body):
    """Wherever in the loop its period was found, a piece begins with the same op: each run
    of the loop is cut into the same pieces (one key, held once)."""
    starts = set()
    for r in range(len(body)):
        rotated = body[r:] + body[:r]
        first = first_of_rotation(rotated)
        starts.add(tuple(map(repr, rotated[first:] + rotated[:first])))
    assert len(starts) == 1


@pytest.mark.parametrize("piece", [True, False])
def test_a_loops_piece_is_offered_at_its_second_sighting(piece):
    """A piece of a loop with no sync point (its repeats shown already by the period its cut
    was found by) is offered at its second sighting; any other stretch at its REPEATS-th."""
    replay = StretchReplay(lambda obj: getattr(obj, "_h", None), measured=False)
    carried = []
    for batch in range(1, REPEATS + 2):
        stretch = replay.current
        stretch.add_op(m.KIND_FUNCTION, api.ARRAY, 10 * batch, "ones", None, (8,), {})
        stretch.piece = piece
        header = {"b": batch}
        replay.shape(header, replay.swap(), batch)
        carried.append("O" if "O" in header else "T" if "T" in header else "ops")
        replay.answered(batch, header.get("O"))
    offered_at = carried.index("O") + 1
    assert offered_at == (2 if piece else REPEATS) and PIECE_REPEATS == 2


def test_a_loops_pieces_are_not_timed():
    """A piece's ops go at its cut whether replayed or not (holding it costs no overlap),
    and the interval to the next sync point is the whole loop's, as long as the loop is: a
    piece is put down no time (a long loop after a short one would be judged slower), where
    any other stretch, sighted or replayed, is."""
    for piece in (True, False):
        replay = StretchReplay(lambda obj: getattr(obj, "_h", None))
        timed = []
        for batch in range(1, 8):
            stretch = replay.current
            stretch.add_op(m.KIND_FUNCTION, api.ARRAY, 10 * batch, "ones", None, (8,), {})
            stretch.piece = piece
            header = {"b": batch}
            replay.shape(header, replay.swap(), batch)
            replay.answered(batch, header.get("O"))
            timed.append(bool(replay._ending))
            replay.synced()
        assert any(timed) != piece, piece
