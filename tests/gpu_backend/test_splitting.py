"""Long ops in pieces (gpu_backend/worker/splitting.py, issue 38): every op kind the worker
splits gives, in pieces, the bits of the whole op; what it must not split runs whole; and a
paced pool splits its sessions' long ops while two of them take turns on the device.

The unit tests drive a Splitter on the NumPy device with a real pacer (no lease: nothing to
hand over) and pieces of 0.1 µs, so that small arrays split into many pieces.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.devices.numpy_device import NumpyDevice
from gpu_backend.pool import LocalPool
from gpu_backend.protocol import messages as m
from gpu_backend.worker.pacing import Pacer
from gpu_backend.worker.splitting import GEMM_ALIGN, TRIES, Splitter, _rows_for
from kernelproxy.modules import module_for
from kernelproxy.session import Session

from tests.differential import POOL_RUNS_NUMPY, TEST_DEVICES

F, M, O = m.KIND_FUNCTION, m.KIND_METHOD, m.KIND_OPERATOR
TINY_PIECE = 1e-7

_rng = np.random.default_rng(0)
A = _rng.random((2048, 64), dtype=np.float32)
B = _rng.random((64, 128), dtype=np.float32)
X = _rng.random((300, 200))
Y = _rng.random((300, 200))
Z = (_rng.random((64, 1024)) + 1j * _rng.random((64, 1024))).astype(np.complex64)
CUBE = _rng.random((40, 30, 20))


def _gemm_rows_exact() -> bool:
    """Whether this host's BLAS gives a GEMM's rows the same bits in row pieces as whole.
    OpenBLAS picks its kernels by CPU and by size (on an AMD EPYC host of CI's kind, 512-row
    pieces of ``A @ B`` differ in the last bit from the whole product): the splitter then
    finds the pieces unequal and runs GEMMs whole, which the tests below expect."""
    whole = A @ B
    return all(np.array_equal(A[i:i + GEMM_ALIGN] @ B, whole[i:i + GEMM_ALIGN])
               for i in range(0, A.shape[0], GEMM_ALIGN))


GEMM_EXACT = _gemm_rows_exact()

#: (kind, name, where the device keeps it, arguments, keywords): one per way of splitting
SPLIT = [
    (O, "matmul", "operators", [A, B], {}),
    (F, "matmul", "functions", [A, B], {}),
    (F, "dot", "functions", [A, B], {}),
    (M, "dot", "methods", [A, B], {}),
    (O, "add", "operators", [X, Y], {}),
    (O, "mul", "operators", [X, 2.5], {}),
    (O, "lt", "operators", [X, Y], {}),
    (O, "neg", "operators", [X], {}),
    (F, "sin", "functions", [X], {}),
    (F, "add", "functions", [X, Y], {"dtype": np.float32}),
    (F, "sum", "functions", [X, 1], {}),
    (M, "sum", "methods", [X], {"axis": -1}),
    (M, "max", "methods", [X], {"axis": 1, "keepdims": True}),
    (F, "argmax", "functions", [X], {"axis": 1}),
    (F, "mean", "functions", [CUBE], {"axis": (1, 2)}),
    (F, "amin", "functions", [CUBE], {"axis": 2, "keepdims": True}),
    (F, "fft.fft", "functions", [Z], {}),
    (F, "fft.rfft", "functions", [X], {"n": 256}),
    (F, "fft.irfft", "functions", [Z], {"norm": "ortho"}),
]


@pytest.fixture
def rig():
    device = NumpyDevice()
    pacer = Pacer(device)
    pieces: list = []

    def after_piece(executed: int) -> bool:
        pieces.append(executed)
        return pacer.after_piece(executed, lambda: False)
    return device, Splitter(device, after_piece, TINY_PIECE), pieces


@pytest.mark.parametrize("kind,name,table,args,kwargs", SPLIT,
                         ids=[f"{k}-{n}-{i}" for i, (k, n, *_rest) in enumerate(SPLIT)])
def test_each_op_kind_in_pieces_gives_the_whole_ops_bits(rig, kind, name, table, args, kwargs):
    device, splitter, pieces = rig
    fn = getattr(device, table)[name]
    whole = fn(*args, **kwargs)
    timed = splitter.run(kind, name, fn, args, kwargs, 7)   # the first of its class: whole, timed
    assert pieces == [] and device.same_bits(timed, whole)
    assert splitter.figures() == {"ops": 0, "equal": 0, "unequal": 0}
    checked = splitter.run(kind, name, fn, args, kwargs, 7)   # in pieces and whole: compared
    assert device.same_bits(checked, whole) and pieces   # (the pieces were paced)
    if name in ("matmul", "dot") and not GEMM_EXACT:   # (this host's BLAS: never split)
        for _ in range(TRIES):   # (longer pieces are tried before the class runs whole)
            if splitter.figures()["unequal"]:
                break
            assert device.same_bits(splitter.run(kind, name, fn, args, kwargs, 7), whole)
        assert splitter.figures() == {"ops": 0, "equal": 0, "unequal": 1}
        del pieces[:]
        again = splitter.run(kind, name, fn, args, kwargs, 7)
        assert device.same_bits(again, whole) and pieces == []
        return
    assert splitter.figures() == {"ops": 0, "equal": 1, "unequal": 0}
    del pieces[:]
    split = splitter.run(kind, name, fn, args, kwargs, 7)
    assert device.same_bits(split, whole), (split, whole)
    assert splitter.figures()["ops"] == 1 and splitter.touched == 2
    (per_piece,) = splitter.verdicts.values()   # rows per piece, aligned for a GEMM
    assert per_piece % (GEMM_ALIGN if name in ("matmul", "dot") else 1) == 0
    assert len(pieces) == -(-args[0].shape[0] // per_piece) - 1 >= 1   # a look between two
    assert set(pieces) == {7}                            # ... for the batch's 8th op


#: ops that must run whole: an ``out``, broadcasting, a reduction over axis 0 or all axes,
#: a 1-D or batched GEMM, FFTs along axis 0, arguments the splitter does not know
WHOLE = [
    (F, "add", "functions", [X, Y], {"out": np.empty_like(X)}),
    (O, "add", "operators", [X, Y[0]], {}),
    (F, "add", "functions", [X, Y], {"casting": "unsafe"}),
    (F, "sum", "functions", [X], {}),
    (F, "sum", "functions", [X, 0], {}),
    (M, "sum", "methods", [X], {"axis": (0, 1)}),
    (F, "sum", "functions", [X, 1, None], {}),
    (F, "matmul", "functions", [np.ones((2, 1024, 64)), np.ones((2, 64, 64))], {}),
    (F, "dot", "functions", [A, B[:, 0]], {}),
    (F, "fft.fft", "functions", [Z], {"axis": 0}),
    (F, "divmod", "functions", [X, Y], {}),
    (F, "cumsum", "functions", [X, 1], {}),
    (O, "matmul", "operators", [A[:1000], B], {}),   # fewer rows than two aligned blocks
    (O, "pow", "operators", [X, 2], {}),              # a ** 2 need not be power(a, 2) to the bit
    (F, "mean", "functions", [X.astype(np.float16)], {"axis": 1}),   # float16 sums differ with out=
]


@pytest.mark.parametrize("kind,name,table,args,kwargs", WHOLE,
                         ids=[f"{k}-{n}-{i}" for i, (k, n, *_rest) in enumerate(WHOLE)])
def test_ops_it_must_not_split_run_whole_and_unremembered(rig, kind, name, table, args, kwargs):
    device, splitter, pieces = rig
    fn = getattr(device, table).get(name)
    if fn is None:
        pytest.skip(f"{name} is not on this device")
    for _ in range(2):
        got = splitter.run(kind, name, fn, args, dict(kwargs), 0)
    fresh = {k: (np.empty_like(v) if k == "out" else v) for k, v in kwargs.items()}
    expected = fn(*args, **fresh)   # (an ``out`` of its own: compared with the one written)
    if isinstance(expected, tuple):
        assert all(device.same_bits(g, e) for g, e in zip(got, expected))
    else:
        assert device.same_bits(np.asarray(got), np.asarray(expected))
    assert pieces == [] and splitter.verdicts == {} and splitter.touched == 0


def test_an_op_shorter_than_two_pieces_is_remembered_whole():
    device = NumpyDevice()
    splitter = Splitter(device, lambda executed: True, piece_seconds=1e-7)
    splitter.piece_seconds = 3600.0   # (the work threshold stays a tiny piece's)
    fn = device.functions["sin"]
    for _ in range(3):
        assert device.same_bits(splitter.run(F, "sin", fn, [X], {}, 0), np.sin(X))
    assert list(splitter.verdicts.values()) == [0]
    assert splitter.figures() == {"ops": 0, "equal": 0, "unequal": 0} and splitter.touched == 0


def test_a_cancelled_batch_stops_between_pieces():
    from gpu_backend.worker.splitting import Interrupted
    device = NumpyDevice()
    looks: list = []

    def cancelled_after_two(executed: int) -> bool:
        looks.append(executed)
        return len(looks) < 2
    splitter = Splitter(device, cancelled_after_two, TINY_PIECE)
    fn = device.functions["sin"]
    splitter.run(F, "sin", fn, [X], {}, 0)   # timed
    with pytest.raises(Interrupted):          # checked in pieces: cancelled at the second look
        splitter.run(F, "sin", fn, [X], {}, 0)
    assert looks == [0, 0]
    assert type(next(iter(splitter.verdicts.values()))) is tuple   # still to be checked


def test_rows_per_piece_are_aligned_and_leave_at_least_two_pieces():
    assert _rows_for(8192, 512, 0.0215, 0.001) == 512      # 22 pieces wanted: 16 of 512 rows
    assert _rows_for(8192, 512, 0.004, 0.001) == 2048
    assert _rows_for(8192, 512, 0.0015, 0.001) is None     # under two pieces' time
    assert _rows_for(1000, 512, 1.0, 0.001) == 512          # two pieces: 512 and 488
    assert _rows_for(512, 512, 1.0, 0.001) is None          # one aligned block: whole
    assert _rows_for(8192, 512, 0.0, 0.0, at_least=2 * 4096) is None


def test_a_paced_pool_splits_long_ops_while_two_sessions_take_turns(monkeypatch):
    """End to end: workers of a ``fair`` pool with tiny pieces; two sessions, their ops
    queued at once, so that their workers take turns on the device (the arbiter hands it
    over between pieces). The first op of a class runs whole, the later ones in pieces (on
    a GPU: where cuBLAS and cuFFT give the same bits; on the NumPy device always): every
    result has the bits of the first. (A class is learnt only at an op its worker ran
    holding the device alone, which a loaded host may delay by a round or more: the rounds
    go on until every class has its verdict and one round ran split, at most ROUNDS.)"""
    monkeypatch.setenv("GPUWB_SPLIT_PIECE_US", "0.1")   # (the pool's workers inherit it)
    split = 6 if GEMM_EXACT or not POOL_RUNS_NUMPY else 5   # (a GEMM's pieces unequal here)
    with LocalPool(devices=TEST_DEVICES, policy="fair", spare_workers=2) as pool:
        sessions = [Session(pool.address, pool.token) for _ in range(2)]
        try:
            inputs = []
            for session in sessions:
                cp = module_for(session)
                inputs.append([cp.asarray(v) for v in (A, B, X, Z)])
            runs: list = [[], []]
            for _ in range(ROUNDS):
                pending = []
                for session, (a, b, x, z) in zip(sessions, inputs):
                    cp = module_for(session)
                    pending.append((a @ b, cp.sin(x) * 2 + x, x.sum(axis=1), cp.fft.fft(z)))
                    session.flush()   # (both workers have their batch before either is read)
                for session, got, mine in zip(sessions, pending, runs):
                    cp = module_for(session)
                    mine.append([cp.asnumpy(r) for r in got])
                figures = [s.memory_info()["split"] for s in sessions]
                if len(runs[0]) >= 4 and all(_learnt(f, split) for f in figures):
                    break
        finally:
            for s in sessions:
                s.close()
    for mine in runs:
        first = mine[0]
        for later in mine[1:]:
            for got, whole in zip(later, first):
                assert got.dtype == whole.dtype and got.tobytes() == whole.tobytes()
    if POOL_RUNS_NUMPY:
        assert np.array_equal(runs[0][0][0], A @ B) and np.array_equal(runs[1][0][2], X.sum(axis=1))
        for f in figures:   # (every class learnt: the equal ones split from then on)
            assert f["equal"] == split and f["unequal"] == 6 - split and f["ops"] >= split, figures
    else:   # a GPU: whatever cuBLAS and cuFFT allow, and the elementwise ops always
        assert all(f["ops"] >= 2 * 3 for f in figures), figures


#: rounds of the two sessions' ops at most, before the classes must have been learnt
ROUNDS = 16


def _learnt(figures: dict, split: int) -> bool:
    """Whether a session's splitter has its verdict on the test's six op classes (split
    equal in *split*) and has run at least one round of them in pieces."""
    return figures["equal"] + figures["unequal"] >= 6 and figures["ops"] >= split


def test_a_class_is_learnt_only_while_the_session_has_the_device_to_itself():
    """Timed beside another session's kernels an op looks longer than it is: its class is
    learnt at a later op, when the pacer says the session runs alone."""
    device = NumpyDevice()
    alone = [False]
    splitter = Splitter(device, lambda executed: True, TINY_PIECE, exclusive=lambda: alone[0])
    fn = device.functions["sin"]
    assert device.same_bits(splitter.run(F, "sin", fn, [X], {}, 0), np.sin(X))
    assert splitter.verdicts == {}
    alone[0] = True
    splitter.run(F, "sin", fn, [X], {}, 0)
    alone[0] = False   # (nor is a class checked beside others)
    splitter.run(F, "sin", fn, [X], {}, 0)
    assert splitter.figures()["equal"] == 0
    alone[0] = True
    splitter.run(F, "sin", fn, [X], {}, 0)
    assert splitter.figures()["equal"] == 1


def test_splitting_is_off_unless_asked_for():
    from gpu_backend.worker.settings import WorkerSettings
    assert WorkerSettings.from_environ({}).split_piece == 0.0
    assert WorkerSettings.from_environ({"GPUWB_SPLIT_PIECE_US": "1000"}).split_piece == pytest.approx(0.001)


def test_a_class_whose_check_saw_a_constant_result_is_checked_again():
    """Zeros give the same bits however they are summed: a check on them proves nothing."""
    device = NumpyDevice()
    splitter = Splitter(device, lambda executed: True, TINY_PIECE)
    fn = device.functions["sin"]
    zeros = np.zeros_like(X)
    for _ in range(3):
        assert device.same_bits(splitter.run(F, "sin", fn, [zeros], {}, 0), zeros)
    assert splitter.figures() == {"ops": 0, "equal": 0, "unequal": 0}   # still to be checked
    splitter.run(F, "sin", fn, [X], {}, 0)
    assert splitter.figures()["equal"] == 1


def test_a_split_ops_output_is_checked_against_the_sessions_limit_as_the_whole_ops_is():
    device = NumpyDevice()
    splitter = Splitter(device, lambda executed: True, TINY_PIECE)
    fn = device.operators["add"]
    for _ in range(2):
        splitter.run(O, "add", fn, [X, Y], {}, 0)
    assert splitter.figures()["equal"] == 1
    device.set_memory_limit(1000)
    with pytest.raises(Exception) as whole:
        fn(X, Y)
    with pytest.raises(type(whole.value)):
        splitter.run(O, "add", fn, [X, Y], {}, 0)
