"""Malformed and out-of-turn graph calls (CuPy's graph API, worker/user_graphs.py) sent
straight to a worker: each is answered with an error (a ``ProtocolError`` for what no
client sends, CUDA's ``cudaErrorIllegalState`` for a call out of turn), and the session
goes on, as does a bystander (the rig of test_bad_input.py)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import CUDAError, InvalidHandleError, ProtocolError
from kernelproxy.modules import module_for

MALFORMED = [
    ("graph.begin", None, []),
    ("graph.begin", None, [None]),
    ("graph.begin", None, ["relaxed", True]),
    ("graph.begin", None, [2.0, True]),
    ("graph.begin", None, [None, 1]),
    ("graph.begin", None, [None, True, 3]),
    ("graph.route", None, [True]),             # no capture in progress
    ("graph.route", None, []),
    ("graph.end", -1, []),
    ("graph.end", "x", []),
    ("graph.end", 5, [1]),
    ("graph.launch", None, []),
    ("graph.launch", "x", []),
    ("graph.upload", 3.5, []),
    ("graph.launch", 7, [1]),
    ("graph.nonsense", None, []),
]


def _call(session, name, target, args, want=api.VALUE):
    session.submit(m.KIND_CUDA, want, None, name, target, args)
    session.sync()


@pytest.mark.parametrize("name,target,args", MALFORMED,
                         ids=[f"{n}:{t!r}:{a!r}" for n, t, a in MALFORMED])
def test_malformed_graph_calls_are_protocol_errors(bad_pool, bystander, victim, name, target,
                                                   args):
    cp = module_for(victim)
    x = cp.arange(5.0)
    with pytest.raises(ProtocolError):
        _call(victim, name, target, args)
    np.testing.assert_array_equal((x * 2).get(), np.arange(5.0) * 2)
    bystander.check()


def test_graph_calls_out_of_turn(bad_pool, bystander, victim):
    """An end with no capture, a second begin, a launch of what is not a graph: CUDA's
    errors or an unknown handle; the capture begun goes on and ends with a graph."""
    cp = module_for(victim)
    x = cp.arange(5.0)
    victim.sync()
    with pytest.raises(CUDAError, match="cudaErrorIllegalState"):
        _call(victim, "graph.end", victim.new_id(), [])
    with pytest.raises(CUDAError, match="cudaErrorInvalidValue"):
        _call(victim, "graph.begin", None, [7, False])   # (no such capture mode)
    with pytest.raises(InvalidHandleError):
        _call(victim, "graph.launch", x._h, [], api.NONE)   # an array, not a graph
    with pytest.raises(InvalidHandleError):
        _call(victim, "graph.launch", 10**9, [], api.NONE)
    _call(victim, "graph.begin", None, [None, True])
    with pytest.raises(CUDAError, match="cudaErrorIllegalState"):
        _call(victim, "graph.begin", None, [None, True])
    y = x + 1
    graph = victim.new_id()
    _call(victim, "graph.end", graph, [])
    _call(victim, "graph.launch", graph, [], api.NONE)
    np.testing.assert_array_equal(y.get(), np.arange(5.0) + 1)
    victim.release(graph)
    with pytest.raises(InvalidHandleError):
        _call(victim, "graph.launch", graph, [], api.NONE)
    np.testing.assert_array_equal((x * 3).get(), np.arange(5.0) * 3)
    bystander.check()


def test_a_session_that_ends_mid_capture(bad_pool, bystander):
    """A client that closes its session during a capture: the worker ends with it."""
    import kernelproxy
    session = kernelproxy.connect(bad_pool.address, bad_pool.token)
    cp = module_for(session)
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.arange(5.0)
    with s:
        s.begin_capture()
        (x * 2).sum()
        session.close()
    bystander.check()
