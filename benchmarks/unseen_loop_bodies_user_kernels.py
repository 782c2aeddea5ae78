"""The tenth campaign of ``unseen_loops.py``: loops whose step launches the user's own kernels
(``RawKernel``, a ``RawModule``'s functions, ``ElementwiseKernel``, ``ReductionKernel``), as a
CuPy user who writes kernels does: an in-place update, ping-pong buffers, outputs given,
a norm read every step, a kernel writing through a view or into a fresh copy, integer
atomics, a time argument that changes every step, a loop with no read. Since the
forty-eighth session such a kernel is captured in its stretch's graphs and its stretch run
ahead (worker/eager_ops.captured_kernel; docs/stretch-replay.md, "A user's kernels
captured and run ahead").

Kernels need a GPU: where the module refuses them (the NumPy device raises
``NotImplementedError`` at the next sync point) or is NumPy itself, each loop does the same
arithmetic with array ops, so that the campaign still runs on the NumPy device (those
results are NumPy's, not bitwise a GPU kernel's). On a GPU host the pool's kernels are
compared bit for bit with local CuPy's (``unseen_loops.py --local cupy``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from unseen_loop_bodies import fbits


def host(xp, a):
    return np.asarray(a) if xp is np else a.get()


#: the kernel :func:`_kernels` launches once to learn whether a module runs CUDA code
_PROBE = r"""extern "C" __global__ void probe_one(float* a) { a[threadIdx.x] = 1.0f; }"""


def _kernels(xp, make: Callable[[Any], Any]) -> Any:
    """*make(xp)*'s kernels where *xp* runs CUDA kernels, else None: NumPy, or a pool whose
    device runs no CUDA code (the NumPy device refuses a kernel at the next sync point: one
    probe launch and a read tell, before the loop)."""
    if xp is np or not hasattr(xp, "RawKernel"):
        return None
    probe = xp.zeros(1, dtype=xp.float32)
    try:
        xp.RawKernel(_PROBE, "probe_one")((1,), (1,), (probe,))
        float(probe.sum())
    except NotImplementedError:
        return None
    return make(xp)


_AXPY = r"""extern "C" __global__ void axpy_in_place(float a, const float* x, float* y, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"""


def raw_axpy_in_place(xp, n):
    """``y = a*x + y`` by a RawKernel writing y in place, x then moved by ops; y's sum read
    every step."""
    size = 4096

    k = _kernels(xp, lambda cp: cp.RawKernel(_AXPY, "axpy_in_place"))
    x = xp.linspace(0, 1, size, dtype=xp.float32)
    y = xp.zeros(size, dtype=xp.float32)
    out = []
    for _ in range(n):
        if k is not None:
            k((16,), (256,), (np.float32(0.25), x, y, np.int32(size)))
        else:
            y += np.float32(0.25) * x
        x = xp.tanh(x * 1.01) + 0.001
        out.append(fbits(float(y.sum())))
    return out, host(xp, y)


_HEAT = r"""extern "C" __global__ void heat_step(const double* u, double* v, double r, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i == 0 || i == n - 1) { if (i < n) v[i] = u[i]; return; }
    if (i < n) v[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
}"""


def raw_heat_ping_pong(xp, n):
    """A 1-d heat equation by a RawKernel from u into v, the two buffers swapped each step
    (ping-pong, no copy), the peak read every step."""
    size = 2048

    k = _kernels(xp, lambda cp: cp.RawKernel(_HEAT, "heat_step"))
    u = xp.zeros(size)
    u[size // 2 - 16:size // 2 + 16] = 1.0
    v = xp.empty_like(u)
    out = []
    for _ in range(n):
        if k is not None:
            k((8,), (256,), (u, v, 0.2, np.int32(size)))
        else:
            v[0], v[-1] = u[0], u[-1]
            v[1:-1] = u[1:-1] + 0.2 * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        u, v = v, u
        out.append(fbits(float(u.max())))
    return out, host(xp, u)


def leapfrog_outputs_given(xp, n):
    """An oscillator stepped by an ElementwiseKernel of two outputs given as arguments
    (preallocated, then swapped with the inputs), the energy read every step."""
    size = 1000

    k = _kernels(xp, lambda cp: cp.ElementwiseKernel(
        "float64 x, float64 v, float64 dt", "float64 xn, float64 vn",
        "vn = v - dt * x; xn = x + dt * vn", "leapfrog_given"))
    x = xp.linspace(-1, 1, size)
    v = xp.zeros(size)
    xn, vn = xp.empty_like(x), xp.empty_like(v)
    out = []
    for _ in range(n):
        if k is not None:
            k(x, v, 0.01, xn, vn)
        else:
            vn[...] = v - 0.01 * x
            xn[...] = x + 0.01 * vn
        x, xn = xn, x
        v, vn = vn, v
        out.append(fbits(float((x * x + v * v).sum())))
    return out, host(xp, x), host(xp, v)


def elementwise_returning_step(xp, n):
    """A damped update by an ElementwiseKernel that returns its result (a Python float among
    its arguments, the same every step), the mean read every step."""
    size = 2000

    k = _kernels(xp, lambda cp: cp.ElementwiseKernel("T x, T g, T lr", "T y",
                                                     "y = x - lr * g * (T)0.5", "damped_update"))
    w = xp.linspace(0, 2, size)
    out = []
    for _ in range(n):
        g = w * w - 1.0
        w = k(w, g, 0.05) if k is not None else w - 0.05 * g * 0.5
        out.append(fbits(float(w.mean())))
    return out, host(xp, w)


def reduction_kernel_norm_read(xp, n):
    """A ReductionKernel's L2 norm of the state, read every step to normalise it."""
    size = 3000

    k = _kernels(xp, lambda cp: cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)",
                                                   "0", "l2_unseen"))
    x = xp.linspace(0.5, 1.5, size)
    out = []
    for _ in range(n):
        x = xp.sin(x) + 0.1 * x
        norm = float(k(x)) if k is not None else float(xp.sqrt((x * x).sum()))
        x = x / norm
        out.append(fbits(norm))
    return out, host(xp, x)


_PARTICLES = r"""extern "C" {
__global__ void forces(const float* p, float* f, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) f[i] = -p[i] * 0.5f;
}
__global__ void kick_drift(float* p, float* v, const float* f, float dt, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) { v[i] += dt * f[i]; p[i] += dt * v[i]; }
}
}"""


def raw_module_two_functions(xp, n):
    """Particles stepped by two functions of one RawModule (forces, then kick and drift,
    writing the state in place), the kinetic energy read every step."""
    size = 1024

    def make(cp):
        module = cp.RawModule(code=_PARTICLES)
        forces, kick = module.get_function("forces"), module.get_function("kick_drift")
        return forces, kick

    kernels = _kernels(xp, make)
    p = xp.linspace(-1, 1, size, dtype=xp.float32)
    v = xp.zeros(size, dtype=xp.float32)
    f = xp.empty(size, dtype=xp.float32)
    dt = np.float32(0.01)
    out = []
    for _ in range(n):
        if kernels is not None:
            kernels[0]((4,), (256,), (p, f, np.int32(size)))
            kernels[1]((4,), (256,), (p, v, f, dt, np.int32(size)))
        else:
            f[...] = -p * np.float32(0.5)
            v += dt * f
            p += dt * v
        out.append(fbits(float((v * v).sum())))
    return out, host(xp, p), host(xp, v)


_SCALE = r"""extern "C" __global__ void scale(float* a, float s, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) a[i] *= s;
}"""


def raw_kernel_on_a_fresh_copy(xp, n):
    """``w = x.copy()`` then a RawKernel scales w in place; x keeps its values; both read."""
    size = 1500

    k = _kernels(xp, lambda cp: cp.RawKernel(_SCALE, "scale"))
    x = xp.linspace(0, 1, size, dtype=xp.float32)
    out = []
    for i in range(n):
        w = x.copy()
        if k is not None:
            k((6,), (256,), (w, np.float32(0.75), np.int32(size)))
        else:
            w *= np.float32(0.75)
        x = x + w * np.float32(0.01)
        out.append((fbits(float(w.sum())), fbits(float(x[7]))))
    return out, host(xp, x)


def raw_kernel_through_a_view(xp, n):
    """A RawKernel scales the interior ``u[1:-1]`` of the state in place (a view of it), the
    boundary kept; the sum read every step."""
    size = 1026

    k = _kernels(xp, lambda cp: cp.RawKernel(_SCALE, "scale"))
    u = xp.linspace(1, 2, size, dtype=xp.float32)
    out = []
    for _ in range(n):
        if k is not None:
            k((5,), (256,), (u[1:-1], np.float32(0.99), np.int32(size - 2)))
        else:
            u[1:-1] *= np.float32(0.99)
        u = u + np.float32(0.001)
        out.append(fbits(float(u.sum())))
    return out, host(xp, u)


def raw_kernel_time_argument(xp, n):
    """A forcing term whose RawKernel takes the time ``np.float32(t)``, a value that changes
    every step (a stretch's key holds a kernel's scalars: not held), the sum read."""
    size = 2048
    src = r"""extern "C" __global__ void forced(float* u, float t, int n) {
        int i = blockDim.x * blockIdx.x + threadIdx.x;
        if (i < n) u[i] = 0.98f * u[i] + 0.01f * t;
    }"""

    k = _kernels(xp, lambda cp: cp.RawKernel(src, "forced"))
    u = xp.zeros(size, dtype=xp.float32)
    out = []
    for i in range(n):
        t = np.float32(i * 0.05)
        if k is not None:
            k((8,), (256,), (u, t, np.int32(size)))
        else:
            u[...] = np.float32(0.98) * u + np.float32(0.01) * t
        out.append(fbits(float(u.sum())))
    return out, host(xp, u)


def kernel_every_other_step(xp, n):
    """A RawKernel on even steps and the same arithmetic by ops on odd ones (two stretches
    taking turns), a read every step."""
    size = 4096

    k = _kernels(xp, lambda cp: cp.RawKernel(_AXPY, "axpy_in_place"))
    x = xp.linspace(0, 1, size, dtype=xp.float32)
    y = xp.ones(size, dtype=xp.float32)
    out = []
    for i in range(n):
        if k is not None and i % 2 == 0:
            k((16,), (256,), (np.float32(-0.125), x, y, np.int32(size)))
        else:
            y += np.float32(-0.125) * x
        y = y * np.float32(1.0625)
        out.append(fbits(float(y.max())))
    return out, host(xp, y)


def raw_kernel_no_read_loop(xp, n):
    """Two hundred steps of a RawKernel and ops with no read inside the loop (cut into
    pieces by the client), one read at the end."""
    size = 2048

    k = _kernels(xp, lambda cp: cp.RawKernel(_AXPY, "axpy_in_place"))
    x = xp.linspace(0, 1, size, dtype=xp.float32)
    y = xp.zeros(size, dtype=xp.float32)
    for _ in range(n):
        if k is not None:
            k((8,), (256,), (np.float32(0.01), x, y, np.int32(size)))
        else:
            y += np.float32(0.01) * x
        x = x * np.float32(0.999)
    return fbits(float(y.sum())), host(xp, y)


_COUNT = r"""extern "C" __global__ void bucket_count(const float* x, unsigned int* hist, int n, int bins) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) {
        int b = (int)(x[i] * bins);
        if (b >= 0 && b < bins) atomicAdd(&hist[b], 1u);
    }
}"""


def atomic_histogram_each_step(xp, n):
    """A histogram by a RawKernel's integer atomics into counts zeroed each step
    (``hist[...] = 0``), the fullest bucket read every step."""
    size, bins = 5000, 16

    k = _kernels(xp, lambda cp: cp.RawKernel(_COUNT, "bucket_count"))
    x = xp.linspace(0, 0.999, size, dtype=xp.float32)
    hist = xp.zeros(bins, dtype=xp.uint32)
    out = []
    for _ in range(n):
        hist[...] = 0
        if k is not None:
            k((20,), (256,), (x, hist, np.int32(size), np.int32(bins)))
        else:
            b = (x * np.float32(bins)).astype(xp.int32)
            hist += xp.bincount(b[(b >= 0) & (b < bins)], minlength=bins).astype(xp.uint32)
        x = (x * np.float32(1.37) + np.float32(0.11)) % np.float32(1.0)
        out.append(int(hist.max()))
    return out, host(xp, hist)


#: name → (function, iterations, compared with NumPy); NumPy and the NumPy device run each
#: loop's ops; a GPU's pool and local CuPy its kernels
PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (raw_axpy_in_place, 60, False),            # (tanh and sums: CUDA's and CuPy's bits)
        (raw_heat_ping_pong, 80, True),
        (leapfrog_outputs_given, 60, False),       # (a sum)
        (elementwise_returning_step, 60, False),   # (a mean)
        (reduction_kernel_norm_read, 60, False),   # (sin)
        (raw_module_two_functions, 60, False),     # (a sum)
        (raw_kernel_on_a_fresh_copy, 60, False),   # (a sum)
        (raw_kernel_through_a_view, 60, False),    # (a sum)
        (raw_kernel_time_argument, 60, False),     # (a sum)
        (kernel_every_other_step, 60, True),
        (raw_kernel_no_read_loop, 200, False),     # (a sum)
        (atomic_histogram_each_step, 60, True),
    ]}
