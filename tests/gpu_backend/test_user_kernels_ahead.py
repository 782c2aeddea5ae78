"""A loop whose step launches a user's kernels (``RawKernel``, a ``RawModule``'s function,
``ElementwiseKernel``, ``ReductionKernel``): captured in its stretch's graphs with the ops
around it, its next replay run ahead by the worker, bitwise as without replay
(worker/eager_ops.captured_kernel, worker/stretch_replay._kernel_changes_only; the rules
alone: test_user_kernel_rules.py). A user's kernel may write any array it is given, so a
step that gives one an input is run ahead as an in-place write into that input is (its
writes kept in the graphs' buffers until the client asks), never replayed early; and one
given an array an op made that may be its input's memory (``x.reshape``) is never run
ahead. GPU pools only: the NumPy device runs no CUDA kernels."""

from __future__ import annotations

import time

import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import TEST_DEVICES, assert_bitwise as _bitwise
from ..quiet_gc import no_collection
from ..run_ahead_sessions import beside_no_replay, pool_running_ahead

pytestmark = pytest.mark.skipif(
    TEST_DEVICES in ("cpu", "numpy") or TEST_DEVICES.startswith("cpu"),
    reason="a user's CUDA kernels need a GPU pool")

STEPS = 40
PAUSE = 0.001

_SCALE = r"""extern "C" __global__ void scale_shift(float* a, const float* b, float s, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) a[i] = a[i] * s + b[i];
}"""

_MODULE = r"""extern "C" __global__ void half_of(double* a, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) a[i] *= 0.5;
}
extern "C" __global__ void add_to(double* a, const double* b, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) a[i] += b[i];
}"""


_HEAT = r"""extern "C" __global__ void heat_step_ahead(const double* u, double* v, double r, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i == 0 || i == n - 1) { if (i < n) v[i] = u[i]; return; }
    if (i < n) v[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
}"""

_HALF_INTO = r"""extern "C" __global__ void half_into(const float* x, float* y, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) y[i] = 0.5f * x[i];
}"""

_THROUGH_POINTERS = r"""extern "C" __global__ void add_through(const unsigned long long* ptrs, int n) {
    float* x = (float*)ptrs[0];
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}"""

_THROUGH_A_POINTER = r"""extern "C" __global__ void add_at(unsigned long long ptr, int n) {
    float* x = (float*)ptr;
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) x[i] += 2.0f;
}"""

_FORCED = r"""extern "C" __global__ void forced_ahead(float* u, float t, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) u[i] = 0.98f * u[i] + 0.01f * t;
}"""

_BUMP = r"""extern "C" __global__ void bump_ahead(double* z, double* y, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) { y[i] += 0.25 * z[i]; z[i] += 1.0; }
}"""


@pytest.fixture(scope="module")
def pool():
    with pool_running_ahead("none") as p:
        yield p


def _raw_kernel_writes_its_input(cp):
    """``scale_shift`` writes x, the step's input, in place every step; a read each step."""
    kernel = cp.RawKernel(_SCALE, "scale_shift")
    x = cp.linspace(0, 1, 1000, dtype=cp.float32)
    b = cp.full(1000, 0.01, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        kernel((4,), (256,), (x, b, np.float32(0.99), np.int32(1000)))
        out.append(float(x.sum()))
        time.sleep(PAUSE)
    return out + [x.get(), b.get()]


def _kernels_that_return_their_results(cp):
    """An ElementwiseKernel and a ReductionKernel, given the step's input and results."""
    axpy = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = 0.5f * x + y",
                                "half_axpy_ahead")
    norm = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2_ahead")
    x = cp.linspace(0, 1, 512, dtype=cp.float32)
    y = cp.full(512, 0.25, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        z = axpy(x, y)
        x = cp.tanh(z) * 0.9
        out.append(float(norm(x)))
        time.sleep(PAUSE)
    return out + [x.get()]


def _module_functions_on_a_fresh_array(cp):
    """A RawModule's two functions, writing only an array the step made (``w = x * 1.5``)."""
    module = cp.RawModule(code=_MODULE)
    half, add = module.get_function("half_of"), module.get_function("add_to")
    x = cp.arange(300, dtype=cp.float64) / 300
    out = []
    for _ in range(STEPS):
        w = x * 1.5
        half((2,), (256,), (w, np.int32(300)))
        add((2,), (256,), (w, x, np.int32(300)))
        x = w - 0.1
        out.append(float(x.max()))
        time.sleep(PAUSE)
    return out + [x.get()]


def _heat_ping_pong(cp):
    """A RawKernel reading u and writing v, the buffers swapped each step (no copy): the
    next replay's inputs are the last one's swapped (GraphCopies.learn)."""
    kernel = cp.RawKernel(_HEAT, "heat_step_ahead")
    u = cp.zeros(1024)
    u[500:524] = 1.0
    v = cp.empty_like(u)
    out = []
    for _ in range(STEPS):
        kernel((4,), (256,), (u, v, 0.2, np.int32(1024)))
        u, v = v, u
        out.append(float(u.max()))
        time.sleep(PAUSE)
    return out + [u.get(), v.get()]


def _kernel_given_a_ufuncs_result(cp):
    """An ElementwiseKernel given ``tanh``'s result and a RawKernel writing that kernel's
    result: every array they are given is the step's own or its input."""
    half = cp.ElementwiseKernel("float64 x, float64 y", "float64 z", "z = x * 0.5 + y",
                                "half_plus_ahead")
    bump = cp.RawKernel(_BUMP, "bump_ahead")
    z = cp.linspace(0, 1, 256)
    y = cp.zeros(256)
    out = []
    for _ in range(STEPS):
        x = cp.tanh(z)
        z = half(x, y)
        bump((1,), (256,), (z, y, np.int32(256)))
        out.append(float(z.sum()))
        time.sleep(PAUSE)
    return out + [z.get(), y.get()]


def _kernel_writes_a_fresh_output(cp):
    """The commonest RawKernel step: its output made by ``empty_like`` in the step, the
    input read (an array made from sizes is the step's own: moving_views.fresh_result)."""
    kernel = cp.RawKernel(_HALF_INTO, "half_into")
    x = cp.linspace(0, 1, 512, dtype=cp.float32)
    out = []
    for _ in range(STEPS):
        y = cp.empty_like(x)
        kernel((2,), (256,), (x, y, np.int32(512)))
        x = y + 0.5
        out.append(float(x.sum()))
        time.sleep(PAUSE)
    return out + [x.get()]


@pytest.mark.parametrize("loop", [_raw_kernel_writes_its_input, _kernels_that_return_their_results,
                                  _module_functions_on_a_fresh_array, _heat_ping_pong,
                                  _kernel_given_a_ufuncs_result, _kernel_writes_a_fresh_output])
def test_a_loop_of_user_kernels_is_captured_and_run_ahead(pool, loop):
    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] >= 1 and figures["fallbacks"] == 0, figures
    # (each replay's closing read runs between its graphs, where no run ahead made it, and
    # the capture's run too; a launch of the user's left eager would be one more a replay)
    assert figures["between_graphs"] <= figures["replays"] + 2, figures
    got, want, _ = beside_no_replay(pool, loop)   # (early replay on: told where it may go)
    _bitwise(got, want)


def test_a_kernel_given_a_view_a_method_made_is_never_run_ahead(pool):
    """``x.reshape(...)`` may be x itself on the worker: a kernel writing through it writes
    x, so the step is never run ahead, and x takes every write as without replay."""
    def loop(cp):
        kernel = cp.RawKernel(_SCALE, "scale_shift")
        x = cp.linspace(0, 1, 256, dtype=cp.float32)
        b = cp.full((16, 16), 0.5, dtype=cp.float32)
        out = []
        for _ in range(STEPS // 2):
            kernel((1,), (256,), (x.reshape(16, 16), b, np.float32(0.5), np.int32(256)))
            out.append(float((x * 2).sum()))
            time.sleep(PAUSE)
        return out + [x.get()]

    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    assert figures["ahead"] == 0, figures


def test_a_run_ahead_of_a_kernel_step_never_asked_for_changes_nothing(pool):
    """The loop's run ahead after its last step, and those a write between two steps drops,
    are never asked for: the input the kernel writes ends as without replay."""
    def loop(cp):
        kernel = cp.RawKernel(_SCALE, "scale_shift")
        x = cp.linspace(0, 1, 1000, dtype=cp.float32)
        b = cp.full(1000, 0.01, dtype=cp.float32)
        out = []
        for step in range(STEPS):
            kernel((4,), (256,), (x, b, np.float32(0.99), np.int32(1000)))
            out.append(float(x.sum()))
            if step % 11 == 5:
                x[3] = step   # (a write between two replays: the run ahead is dropped)
            time.sleep(PAUSE)
        kept = x.get()
        time.sleep(0.05)   # (the worker's run ahead after the last step has run)
        return out + [kept, x.get()]

    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    _bitwise(got[-1], got[-2])
    assert figures["ahead"] >= 1, figures


def test_a_kernel_writing_only_the_steps_own_arrays_is_replayed_early(pool):
    """Every array the step's kernel is given is one the step made (``w = x * 1.5``): the
    client sends its replay early, at the step's first op, bitwise as without replay."""
    def loop(cp):
        module = cp.RawModule(code=_MODULE)
        half = module.get_function("half_of")
        x = cp.arange(300, dtype=cp.float64) / 300
        out = []
        for _ in range(STEPS):
            w = x * 1.5
            half((2,), (256,), (w, np.int32(300)))
            x = w - 0.1
            out.append(float(x.max()))
            time.sleep(PAUSE)
        return out + [x.get()]

    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        with no_collection():
            got = loop(module_for(s))
        early = s.stretches.figures()["early"]
    _, want, _ = beside_no_replay(pool, loop)
    _bitwise(got, want)
    assert early >= 1


def test_a_kernel_given_addresses_writes_the_users_array_as_without_replay(pool):
    """Once the client was told an address of the session's memory (``x.data.ptr``), a
    kernel may write through it what no graph's buffer nor run ahead sees: the session's
    stretches that launch a user's kernel are re-run from their records, never run ahead,
    and every read and the array after the loop are as without replay (a run ahead after
    the last step wrote x once more, and a graph read its own copy of x, before:
    StretchReplay.pointer_told)."""
    def through_an_array(cp):
        kernel = cp.RawKernel(_THROUGH_POINTERS, "add_through")
        x = cp.zeros(64, dtype=cp.float32)
        ptrs = cp.array([x.data.ptr], dtype=cp.uint64)
        out = []
        for _ in range(STEPS):
            kernel((1,), (64,), (ptrs, np.int32(64)))
            out.append(float(x.sum()))
            time.sleep(PAUSE)
        kept = x.get()
        time.sleep(0.05)
        return out + [kept, x.get()]

    def through_a_scalar(cp):
        kernel = cp.RawKernel(_THROUGH_A_POINTER, "add_at")
        x = cp.zeros(64, dtype=cp.float32)
        y = cp.ones(64, dtype=cp.float32)
        out = []
        for _ in range(STEPS):
            y = y * 1.5
            kernel((1,), (64,), (np.uint64(x.data.ptr), np.int32(64)))
            out.append(float((x + y).sum()))
            time.sleep(PAUSE)
        kept = x.get()
        time.sleep(0.05)
        return out + [kept, x.get()]

    for loop in (through_an_array, through_a_scalar):
        got, want, figures = beside_no_replay(pool, loop, early_replay=False)
        _bitwise(got, want)
        _bitwise(got[-1], got[-2])
        assert figures["ahead"] == 0, (loop.__name__, figures)
        assert figures["graphed"] == 0, (loop.__name__, figures)


def test_a_kernel_given_the_time_each_step_is_held_and_replayed(pool):
    """``np.float32(t)`` among a RawKernel's arguments, another value each step, and an
    ElementwiseKernel's ``np.float64(lr)`` that decays: parameters of one stretch
    (protocol/stretches.kernel_param), not a new stretch each step. The graph bakes the
    first value in; a replay given another re-runs once, and the launch runs eagerly
    between the graphs from then on, bitwise as without replay."""
    def loop(cp):
        forced = cp.RawKernel(_FORCED, "forced_ahead")
        step = cp.ElementwiseKernel("float64 w, float64 g, float64 lr", "float64 z",
                                    "z = w - lr * g", "sgd_step_ahead")
        u = cp.zeros(512, dtype=cp.float32)
        w = cp.linspace(-1, 1, 256)
        out = []
        for i in range(STEPS):
            forced((2,), (256,), (u, np.float32(i * 0.05), np.int32(512)))
            w = step(w, w * w - 0.5, np.float64(0.1 * 0.97 ** i))
            out.append((float(u.sum()), float(w.sum())))
            time.sleep(PAUSE)
        return out + [u.get(), w.get()]

    got, want, figures = beside_no_replay(pool, loop, early_replay=False)
    _bitwise(got, want)
    assert figures["held"] >= 1 and figures["replays"] >= STEPS // 2, figures
