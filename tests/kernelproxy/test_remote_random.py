"""``cupy.random`` through the pool: RandomState, Generator and bit generators as remote
objects, the global state per device as CuPy keeps it, and the object ops' refusals.

The numbers come from the pool's device (cuRAND on a GPU, NumPy's generators on the
NumPy device), so tests compare draws within the pool (same seed, same numbers), never
against the reference's.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import kernelproxy
from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import InvalidHandleError, NotAllowedError, ProtocolError
from kernelproxy.modules import module_for


@pytest.fixture
def fresh_states(cp):
    """The global states as a test leaves them are put back (as cupy.testing does)."""
    saved = cp.random._generator._random_states
    cp.random.reset_states()
    yield
    cp.random._generator._random_states = saved


# ---------------------------------------------------------------- RandomState


def test_same_seed_same_numbers_and_none_seeds_afresh(cp):
    a, b = cp.random.RandomState(7), cp.random.RandomState(7)
    np.testing.assert_array_equal(a.normal(size=50).get(), b.normal(size=50).get())
    a.seed(7)
    first = [float(a.uniform()) for _ in range(5)]
    a.seed(7)
    assert [float(a.uniform()) for _ in range(5)] == first
    a.seed(None)
    assert [float(a.uniform()) for _ in range(5)] != first


def test_array_seed_and_numpy_integer_seeds(cp):
    seed = np.random.RandomState(0).randint(0, 2**31, size=40)
    a, b = cp.random.RandomState(seed), cp.random.RandomState(seed.copy())
    np.testing.assert_array_equal(a.rand(8).get(), b.rand(8).get())
    c, d = cp.random.RandomState(np.uint8(3)), cp.random.RandomState(3)
    np.testing.assert_array_equal(c.rand(4).get(), d.rand(4).get())
    assert cp.random.RandomState(2**64 - 1).rand(2).shape == (2,)


@pytest.mark.parametrize("seed, error", [(1.5, TypeError), (np.float32(0), TypeError),
                                         (np.complex128(0), TypeError), (-1, ValueError),
                                         (2**64, TypeError)])   # (object dtype, as in CuPy)
def test_bad_seeds_fail_at_the_call(cp, seed, error):
    rs = cp.random.RandomState(0)
    with pytest.raises(error):
        rs.seed(seed)
    with pytest.raises(error):
        cp.random.RandomState(seed)
    assert rs.rand(3).shape == (3,)   # the session goes on


def test_methods_give_remote_arrays_of_cupys_shapes_and_dtypes(cp):
    rs = cp.random.RandomState(1)
    x = rs.normal(2.0, 0.5, size=(3, 4), dtype=np.float32)
    assert isinstance(x, cp.ndarray) and x.shape == (3, 4) and x.dtype == np.float32
    assert rs.uniform().shape == ()   # size=None: a 0-d array, as in CuPy
    assert rs.poisson(3.0, size=5, dtype=np.int32).dtype == np.int32
    assert rs.binomial(10, 0.5, size=4).dtype.kind == "i"
    d = rs.dirichlet([1.0, 2.0, 3.0], size=6).get()
    assert d.shape == (6, 3) and np.allclose(d.sum(axis=1), 1)
    ints = rs.randint(3, 9, size=200).get()
    assert ints.min() >= 3 and ints.max() < 9
    assert rs.rand(2, 3, dtype=np.float32).dtype == np.float32 and rs.randn(4).shape == (4,)
    with pytest.raises(TypeError, match="unexpected keyword"):
        rs.rand(2, bad=1)
    with pytest.raises(TypeError, match="float32 and float64"):
        rs.normal(size=3, dtype=np.int32).get()


def test_choice_permutation_shuffle(cp):
    rs = cp.random.RandomState(3)
    picks = rs.choice(5, size=300, p=[0.1, 0.1, 0.1, 0.1, 0.6]).get()
    assert set(np.unique(picks)) <= set(range(5)) and (picks == 4).mean() > 0.4
    perm = rs.permutation(10).get()
    assert sorted(perm) == list(range(10))
    a = cp.arange(10)
    rs.shuffle(a)
    assert sorted(a.get()) == list(range(10))
    with pytest.raises(TypeError, match="cupy.ndarray"):
        rs.shuffle(np.arange(4))


def test_methods_off_the_allow_list_are_attribute_errors(cp):
    rs = cp.random.RandomState(0)
    with pytest.raises(AttributeError):
        rs.set_state
    with pytest.raises(AttributeError):
        rs._generator


# ---------------------------------------------------------------- the global state


def test_module_functions_draw_from_the_global_state(cp, fresh_states):
    rs, twin = cp.random.RandomState(11), cp.random.RandomState(11)
    cp.random.set_random_state(rs)
    assert cp.random.get_random_state() is rs
    np.testing.assert_array_equal(cp.random.rand(5).get(), twin.random_sample(5).get())
    np.testing.assert_array_equal(cp.random.normal(size=4).get(), twin.normal(size=4).get())
    with pytest.raises(TypeError, match="RandomState"):
        cp.random.set_random_state("not a state")


def test_seed_reset_and_swapped_state_dicts(cp, fresh_states):
    cp.random.seed(5)
    a = cp.random.rand(6).get()
    cp.random.seed(5)
    np.testing.assert_array_equal(cp.random.rand(6).get(), a)
    old = cp.random._generator._random_states
    cp.random.reset_states()
    assert cp.random._generator._random_states == {} and cp.random._generator._random_states is not old
    mine = cp.random.RandomState(5)
    cp.random._generator._random_states = {0: mine}   # as cupy.testing.fix_random swaps it
    assert cp.random.get_random_state() is mine


def test_cupy_seed_environment_variable(cp, fresh_states, monkeypatch):
    monkeypatch.setenv("CUPY_SEED", "42")
    a = cp.random.rand(4).get()
    cp.random.reset_states()
    np.testing.assert_array_equal(cp.random.rand(4).get(), a)


def test_sample_functions_call_each_other_as_cupys(cp, fresh_states):
    vals = cp.random.random_integers(0, 2, size=300).get()
    assert vals.min() == 0 and vals.max() == 2
    assert cp.random.random_integers(3).get() in (1, 2, 3)
    counts = cp.random.multinomial(20, [0.2, 0.3, 0.5], size=(4, 2)).get()
    assert counts.shape == (4, 2, 3) and (counts.sum(axis=-1) == 20).all()
    assert cp.random.multinomial(5, [0.5, 0.5]).get().sum() == 5
    assert cp.random.multinomial(5, [0.5, 0.5], size=0).shape == (0, 2)
    assert cp.random.choice(4, 3).shape == (3,) and cp.random.permutation(5).shape == (5,)
    assert len(cp.random.bytes(10)) == 10


def test_global_state_follows_the_active_session(pool, fresh_states):
    s1 = kernelproxy.connect(pool.address, pool.token)
    s2 = kernelproxy.connect(pool.address, pool.token)
    try:
        a = module_for(s1).random.rand(3)
        b = module_for(s2).random.rand(3)
        assert a._s is s1 and b._s is s2
        assert module_for(s2).random.get_random_state()._s is s2
    finally:
        s1.close()
        s2.close()


# ---------------------------------------------------------------- threads


def test_threads_share_a_session_and_a_state(cp, fresh_states):
    rs = cp.random.RandomState(0)
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: rs.normal(size=64), range(16)))
    hosts = [r.get() for r in results]
    assert all(np.isfinite(h).all() for h in hosts)
    assert len({h.tobytes() for h in hosts}) == len(hosts)   # each thread got its own draws


def test_threads_racing_for_the_global_state_get_one(cp, fresh_states):
    got = []
    threads = [threading.Thread(target=lambda: got.append(cp.random.get_random_state()))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(rs) for rs in got}) == 1


# ---------------------------------------------------------------- Generator API


def test_generator_reproducible_and_default_rng(cp):
    g1, g2 = cp.random.default_rng(123), cp.random.default_rng(123)
    np.testing.assert_array_equal(g1.random(20).get(), g2.random(20).get())
    assert isinstance(g1, cp.random.Generator) and isinstance(g1.bit_generator, cp.random.XORWOW)
    assert cp.random.default_rng(g1) is g1
    bg = cp.random.Philox4x3210(9)
    g = cp.random.default_rng(bg)
    assert g.bit_generator is bg
    ints = g.integers(0, 10, size=100).get()
    assert ints.min() >= 0 and ints.max() < 10
    assert g.standard_normal((2, 3), dtype=np.float32).dtype == np.float32
    assert g.uniform(1, 2, size=3, dtype=np.float32).dtype == np.float32


def test_generator_out_and_reseeding_by_a_new_bit_generator(cp):
    g = cp.random.Generator(cp.random.MRG32k3a(seed=5))
    out = cp.empty(8)
    assert g.random(8, out=out) is out
    first = out.get()
    g.bit_generator = cp.random.MRG32k3a(seed=5)
    np.testing.assert_array_equal(g.random(8).get(), first)


def test_bit_generator_seeds(cp):
    seq = np.random.SeedSequence(77)
    a, b = cp.random.XORWOW(seq), cp.random.XORWOW(np.random.SeedSequence(77))
    np.testing.assert_array_equal(a.random_raw(10).get(), b.random_raw(10).get())
    spawned = np.random.SeedSequence(77).spawn(1)[0]
    c = cp.random.XORWOW(spawned)
    assert not np.array_equal(c.random_raw(10).get(), cp.random.XORWOW(77).random_raw(10).get())
    seeds = np.arange(10)
    np.testing.assert_array_equal(cp.random.XORWOW(seeds).random_raw(5).get(),
                                  cp.random.XORWOW(seeds).random_raw(5).get())
    raw = cp.random.XORWOW(1).random_raw((2, 3))
    assert raw.shape == (2, 3) and raw.dtype == np.int32
    assert cp.random.XORWOW(1).random_raw(4, output=False) is None
    for bad in (1.5, np.complex128(1)):
        with pytest.raises(TypeError):
            cp.random.XORWOW(bad)
    with pytest.raises(NotImplementedError, match="base class"):
        cp.random.BitGenerator(1)


def test_curand_constants_pick_the_method(cp):
    curand = cp.cuda.curand
    for method in (curand.CURAND_RNG_PSEUDO_DEFAULT, curand.CURAND_RNG_PSEUDO_XORWOW,
                   curand.CURAND_RNG_PSEUDO_PHILOX4_32_10):
        rs = cp.random.RandomState(1, method=method)
        assert rs.method == method and rs.normal().shape == ()


# ---------------------------------------------------------------- refusals and lifetimes


def _object_op(session, name, target, args=(), want=api.ARRAY, out=None):
    hid = session.new_id() if want == api.ARRAY else out
    seq = session.submit(m.KIND_OBJECT, want, hid, name, target, list(args))
    session.sync()
    return seq


def test_object_ops_off_the_allow_list_are_refused(cp, session):
    rs = cp.random.RandomState(0)
    for name in ("random.RandomState.__reduce__", "random.RandomState._generator",
                 "os.system", "random.RandomState.set_state"):
        with pytest.raises(NotAllowedError):
            _object_op(session, name, rs._h)
    with pytest.raises(NotAllowedError):
        _object_op(session, "builtins.eval", None, ["1"], want=api.NONE, out=session.new_id())
    with pytest.raises(ProtocolError):
        _object_op(session, 42, rs._h)
    assert rs.rand(2).shape == (2,)   # the session goes on


def test_object_ops_find_only_objects_of_their_class(cp, session):
    rs, arr = cp.random.RandomState(0), cp.ones(3)
    g = cp.random.default_rng(0)
    with pytest.raises(InvalidHandleError):
        _object_op(session, "random.Generator.random", rs._h)      # a RandomState, not a Generator
    with pytest.raises(InvalidHandleError):
        _object_op(session, "random.RandomState.rand", arr._h)      # an array, not an object
    with pytest.raises(InvalidHandleError):
        _object_op(session, "random.RandomState.rand", 10**9)       # nothing at all
    with pytest.raises(ProtocolError, match="one value"):
        _object_op(session, "random.Generator.bit_generator", g._h, [1, 2], want=api.NONE)
    assert float(arr.sum()) == 3


def test_a_dropped_object_is_freed_in_op_order(cp, session):
    rs = cp.random.RandomState(0)
    hid = rs._h
    del rs
    with pytest.raises(InvalidHandleError):
        _object_op(session, "random.RandomState.rand", hid)
    assert float(cp.ones(2).sum()) == 2


def test_an_object_of_another_session_is_refused(session, pool):
    other = kernelproxy.connect(pool.address, pool.token)
    try:
        bg = module_for(other).random.XORWOW(1)
        cp = module_for(session)
        with pytest.raises(ValueError, match="another remote session"):
            cp.random.Generator(bg)
        assert float(cp.ones(2).sum()) == 2
    finally:
        other.close()
