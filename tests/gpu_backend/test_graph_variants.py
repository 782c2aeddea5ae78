"""A held stretch's graphs by the ints they baked (worker/graph_state.py, ``VARIANTS``): an
index that takes turns (``buf[i % 8] = x``) gets a graph for each value, kept beside the one
serving; one that moves on (``traj[i] = x``) is made eager, as before. The rules on the
stretch's own state, with real captures' records (the loops themselves:
tests/kernelproxy/test_moving_slices.py)."""

from __future__ import annotations

import numpy as np

from gpu_backend.worker.graph_state import (SHELVES, VARIANTS, WATCHED, Capture, GraphState,
                                            StretchGraph)


def _graph(index: int, dt: float | None = None) -> StretchGraph:
    """A capture that baked *index* at parameter slot 2 (an assignment, op 4) and, given
    *dt*, a draw's float at slot 0 (op 1)."""
    g = StretchGraph(shape=None)
    g.baked[2], g.baked_by[2] = index, 4
    if dt is not None:
        g.baked[0], g.baked_by[0] = dt, 1
    return g


def _state(graph: StretchGraph) -> GraphState:
    state = GraphState(shape=None, servable=True)
    state.captured(graph)
    return state


def test_ints_that_take_turns_are_told_from_ints_that_move_on():
    ring, moving = _state(_graph(0)), _state(_graph(0))
    verdicts = [ring.watch([0.9, 0.1, i % VARIANTS], [2]) for i in range(WATCHED)]
    assert verdicts[:-1] == [None] * (WATCHED - 1) and verdicts[-1] is True and ring.turns
    assert [moving.watch([0.9, 0.1, i], [2]) for i in range(WATCHED)][-1] is False
    assert moving.settled and not moving.turns


def test_a_graph_kept_aside_serves_the_replay_given_its_ints_again():
    first = _graph(0)
    state = _state(first)
    assert state.variant_for([0.9, 0.1, 1]) is None
    assert state.shelve() and state.graph is None and state.stage is Capture.DUE
    second = _graph(1)
    state.captured(second)
    assert state.variant_for([0.9, 0.1, 0]) is first and state.graph is first
    assert state.variants == [second]   # (the one serving kept in its place)
    assert state.variant_for([0.9, 0.1, 1]) is second and state.variants == [first]
    assert state.nbytes() == 0          # (no memory retained by these captures)


def test_graphs_kept_aside_are_bounded_and_dropped_with_the_capture():
    state = _state(_graph(0))
    for i in range(VARIANTS):
        assert state.shelve()
        state.captured(_graph(i + 1))
    assert not state.shelve() and len(state.variants) == VARIANTS
    state.capture_again()   # (memory wanted, an op made eager: every graph goes)
    assert state.graph is None and state.variants == []
    state.captured(_graph(0))
    state.shelved = SHELVES
    assert not state.shelve()   # (captures for ever, graphs dropped again and again: no)


def test_a_shelved_capture_is_not_counted_among_the_captures_refused():
    state = _state(_graph(0))
    state.attempts = 3
    assert state.shelve() and state.attempts == 2


def test_only_ints_get_graphs_of_their_own():
    g = _graph(3, dt=0.5)
    assert GraphState.ints_only(g, [0.5, 0.1, 4])
    assert not GraphState.ints_only(g, [0.25, 0.1, 3])        # (a draw's float moved on)
    assert not GraphState.ints_only(g, [0.5, 0.1, np.float64(4.0)])


def test_an_eager_assignment_whose_index_takes_turns_is_captured_again_with_it_baked():
    state = _state(_graph(0))
    state.eager.add(4)
    state.turning = ([2], frozenset({4}))
    turned = [state.ints_turn([0.9, 0.1, i % 4]) for i in range(WATCHED)]
    assert turned == [False] * (WATCHED - 1) + [True]
    assert 4 not in state.eager and state.graph is None and state.turning is None
    moving = _state(_graph(0))
    moving.eager.add(4)
    moving.turning = ([2], frozenset({4}))
    assert not any(moving.ints_turn([0.9, 0.1, i]) for i in range(WATCHED))
    assert 4 in moving.eager and moving.settled and moving.turning is None


def test_a_run_ahead_answered_counts_among_the_replays_watched():
    state = _state(_graph(0))
    state.turning = ([2], frozenset({4}))
    for i in range(WATCHED):
        state.answered_ahead([0.9, 0.1, i % 2])
    assert state.turning is not None   # (judged at the next replay its graph serves)
    assert state.ints_turn([0.9, 0.1, 0]) and state.turns


def test_misses_a_graph_cannot_run_eagerly_are_judged_at_the_first_repeat():
    ring, moving = _state(_graph(0)), _state(_graph(0))
    assert [ring.watch_misses([0.9, 0.1, i % 4], [2]) for i in (1, 2, 3)] == [None] * 3
    assert ring.watch_misses([0.9, 0.1, 1], [2]) is True and ring.turns
    verdicts = [moving.watch_misses([0.9, 0.1, i], [2]) for i in range(1, VARIANTS + 2)]
    assert verdicts == [None] * VARIANTS + [False] and moving.settled
