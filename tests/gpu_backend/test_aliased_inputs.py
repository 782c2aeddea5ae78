"""A held stretch whose inputs share memory and which writes in place (an array and a view
of it, both named in the loop; pieces of ``split``) is not captured: a capture copies each
input into a buffer of its own, where a write through one would no longer reach the other.
Such a stretch is re-run from its records, as its replays already were (StretchGraphs._fits),
and gives what the ops give. Found by benchmarks/unseen_loops.py: before, the replay that
captured the stretch read stale values, and where both were written a write was lost for
good."""

from __future__ import annotations

import sys

import pytest

from tests.paths import PROJECT_ROOT

from ..differential import assert_bitwise, reference_module
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
# (the loops that found it, benchmarks/unseen_loops.py's programs)
from unseen_loop_bodies import (repro_split_piece_written, repro_two_writes_one_memory,  # noqa: E402
                                repro_view_written_base_read)

STEPS = 30


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("share") as p:
        yield p


def split_piece_written_after_a_read(xp, n):
    """``repro_split_piece_written`` with a read between the split and the write: the
    stretch that writes a piece and reads y is held with both as inputs. (Without the
    read, ``split`` is issued with no wait inside the step, kernelproxy/
    result_structures.py, and a stretch with such a call is sent as its ops, never held.)"""
    x = xp.ones(4)
    out = []
    for _ in range(n):
        y = x * 2
        a, b = xp.split(y, 2)
        out.append(float(a[0]))
        b += 1
        out.append(float(y.sum()))
        x = y / 2
    return out


@pytest.mark.parametrize("program", [repro_two_writes_one_memory, repro_view_written_base_read,
                                     split_piece_written_after_a_read, repro_split_piece_written])
def test_inputs_sharing_memory_written_in_place_give_what_the_ops_give(pool, program):
    def loop(xp):
        return program(xp, STEPS)

    got, want, figures = beside_no_replay(pool, loop)
    assert_bitwise(got, want)
    assert_bitwise(got, loop(reference_module()))   # (NumPy's, or local CuPy's on a GPU)
    if program is not repro_split_piece_written:   # (its split and write in one stretch, sent as ops)
        assert figures["replays"] >= STEPS // 2, figures
