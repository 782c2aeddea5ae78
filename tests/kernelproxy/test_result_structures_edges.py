"""Calls of several results issued with no wait (kernelproxy/result_structures.py): a loop
with no sync point that makes them keeps few batches unanswered; calls CuPy refuses at the
call, given what the client knows of the arrays, raise at the call; the container is the
pool's whatever the timing. Found by a review of the change, each failing before its mend."""

from __future__ import annotations

import numpy as np
import pytest

from kernelproxy.loop_cuts import PIECES_AHEAD
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings


def _bitwise(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
    assert np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)), (a, b)


# ------------------------------------------------------------ 1. replies never read
def _divmod_loop(xp, steps, watch=None):
    x = xp.linspace(0.1, 2.0, 32)
    for _ in range(steps):
        q, r = xp.divmod(x, 0.3)
        x = q * 0.3 + r * 1.0001
        if watch is not None:
            watch()
    return x


def test_a_loop_of_divmod_with_no_sync_point_does_not_pile_up_batches(pool, ref):
    """A loop with no sync point whose step calls divmod: the stretch before each call may
    be held, so each call ends it and goes in a batch of its own, sent without reading a
    reply. Unbounded, no reply was ever read (the stretch never learnt held: two batches a
    step, never a replay) and the batches sent, their frames kept, grew with the loop until
    its sync (40 000 in flight after 20 000 steps). Now at most a few go unanswered, as a
    loop's pieces (loop_cuts.PIECES_AHEAD), and the stretches are replayed."""
    steps = 1500
    # (kept held whatever its replays' timing: a loaded machine's may let it go)
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        cp = module_for(s)
        most = [0]

        def watch():
            most[0] = max(most[0], len(s._in_flight))

        got = _divmod_loop(cp, steps, watch)
        want = _divmod_loop(ref, steps)   # (NumPy's, or local CuPy's on a GPU)
        _bitwise(got.get(), ref.asnumpy(want) if hasattr(ref, "asnumpy") else want)
        replays = s.memory_info()["stretches"]["replays"]
    assert most[0] <= PIECES_AHEAD + 2, f"{most[0]} batches in flight at once ({replays} replays)"
    assert replays > 0


# ------------------------------------------------------------ 2. refusals told by metadata here
def _known(cp, array):
    """*array* with its metadata here (its reply read)."""
    array.shape   # (a sync: the reply that describes it)
    assert array._m is not None or array._s.meta.peek(array._h) is not None
    return array


#: (label, a call of the same name that works — the session's first call of a name waits,
#: its container learnt —, a call NumPy and CuPy refuse at the call from arguments and
#: metadata the client has, every array's shape known)
REFUSED_AT_THE_CALL = [
    ("vsplit of a 1-d array at indices", lambda xp, x, g: xp.vsplit(g, [1]), lambda xp, x, g: xp.vsplit(x, [2])),
    ("dsplit of a 2-d array at indices", lambda xp, x, g: xp.dsplit(g.reshape(1, 3, 4), [1]),
     lambda xp, x, g: xp.dsplit(g, [1])),
    ("split at indices on an axis it lacks", lambda xp, x, g: xp.split(x, [2]),
     lambda xp, x, g: xp.split(x, [2], axis=1)),
    ("array_split on an axis it lacks", lambda xp, x, g: xp.array_split(x, 3),
     lambda xp, x, g: xp.array_split(x, 3, axis=2)),
    ("broadcast_arrays of shapes that do not broadcast", lambda xp, x, g: xp.broadcast_arrays(x, x),
     lambda xp, x, g: xp.broadcast_arrays(x, g)),
    ("meshgrid with a bad indexing", lambda xp, x, g: xp.meshgrid(x, x),
     lambda xp, x, g: xp.meshgrid(x, x, indexing="zz")),
    ("gradient on an axis it lacks", lambda xp, x, g: xp.gradient(g, axis=(0, 1)),
     lambda xp, x, g: xp.gradient(g, axis=(0, 5))),
    ("gradient on an axis twice", lambda xp, x, g: xp.gradient(g, axis=(0, 1)),
     lambda xp, x, g: xp.gradient(g, axis=(1, -1))),
    ("gradient on one axis it lacks", lambda xp, x, g: xp.gradient(g, axis=1),
     lambda xp, x, g: xp.gradient(g, axis=2)),
    ("unique with counts on an axis it lacks", lambda xp, x, g: xp.unique(x, return_counts=True),
     lambda xp, x, g: xp.unique(x, axis=3, return_counts=True)),
    ("qr of a 1-d array", lambda xp, x, g: xp.linalg.qr(g), lambda xp, x, g: xp.linalg.qr(x)),
    ("eigh of a matrix not square", lambda xp, x, g: xp.linalg.eigh(g @ g.T),
     lambda xp, x, g: xp.linalg.eigh(g)),
]


@pytest.mark.parametrize("label, works, call", REFUSED_AT_THE_CALL, ids=[c[0] for c in REFUSED_AT_THE_CALL])
def test_a_call_refused_by_what_the_client_knows_raises_at_the_call(pool, label, works, call):
    """Where the arrays' metadata is here, a call CuPy refuses at the call goes the
    waiting path, so that its error comes at the call (a ``try``/``except`` around it works
    as with CuPy); told, it would come at a later sync point, every op issued in between
    never computed."""
    x_host = np.linspace(0.1, 20.0, 12)
    with pytest.raises((ValueError, IndexError, np.linalg.LinAlgError)):
        call(np, x_host, x_host.reshape(3, 4))
    with Session(pool.address, pool.token) as s:
        cp = module_for(s)
        x = _known(cp, cp.linspace(0.1, 20.0, 12))
        g = _known(cp, x.reshape(3, 4))
        works(cp, x, g)
        with pytest.raises((ValueError, IndexError, np.linalg.LinAlgError)):
            call(cp, x, g)
        assert float(x.sum()) == pytest.approx(float(x_host.sum()))   # (the session goes on)


# ------------------------------------------------------------ 3. a container that depends on timing
def test_gradients_container_does_not_depend_on_whether_a_reply_has_come(pool, ref):
    """``gradient(g)`` of a 2-d array, waited for where g's ndim is not known here, told
    where it is: the container is the pool's either way (learnt from the name's first call
    the pool answered), not CuPy 14's list on a pool whose device gives NumPy's tuple."""
    with Session(pool.address, pool.token) as s:
        cp = module_for(s)
        g = cp.linspace(0.1, 20.0, 12).reshape(3, 4)
        first = cp.gradient(g)     # (g's metadata not here yet: waits)
        second = cp.gradient(g)    # (now here: its container learnt)
        third = cp.gradient(g)     # (told)
        assert type(first) is type(second) is type(third), (type(first), type(second), type(third))
        assert type(third) is type(ref.gradient(ref.ones((3, 4))))


# ------------------------------------------------------------ 4. two threads, one session
def test_two_threads_calling_divmod_and_split_on_one_session_get_their_own_results(pool, ref):
    """Threads share a session (kernelproxy/session.py): each thread's told calls, their
    handles and the cuts around them interleave with the other's, and each gets what the
    same steps give alone."""
    from ..session_threads import FACTORS, values_of_two_threads

    def step_on(xp):
        def step(factor):
            x = xp.linspace(0.1, 2.0, 16) * factor
            q, r = xp.divmod(x, 0.3)
            first, second = xp.split(q + r, 2)
            return float((first * 2 + second).sum())
        return step

    with Session(pool.address, pool.token) as s:
        cp = module_for(s)
        step_on(cp)(1.0)   # (each name's first call: its container learnt)
        step_on(cp)(1.0)
        got = values_of_two_threads(step_on(cp), 40)
    for factor in FACTORS:
        want = step_on(ref)(factor)   # (NumPy's, or local CuPy's on a GPU)
        assert got[factor] == [want] * 40
