"""The loop programs of benchmarks/unseen_loops.py: plain functions ``name(xp, n)``, each a
loop of *n* iterations of the kind a CuPy user writes in a notebook, written against stretch
replay's blind spots (views across iterations, in-place writes, special scalars, errors
mid-loop, arrays sharing memory, ints too large to send, …), returning NumPy arrays, Python
values, or lists and tuples of them; ``PROGRAMS`` names each with its iterations and whether
NumPy defines its values as CuPy does."""

from __future__ import annotations

import math
import struct
from typing import Callable

import numpy as np

# ---------------------------------------------------------------------------------------
# helpers the programs share


def host(xp, a):
    """*a* as a NumPy array of this process (a copy, so that later writes do not reach it)."""
    if xp is np:
        return np.array(a, copy=True)
    return xp.asnumpy(a)


def fbits(v: float) -> str:
    """A float's bits (so that -0.0, NaNs' signs and payloads count)."""
    return struct.pack("<d", v).hex()


def _rng(seed: int = 0):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------
# the programs


def view_used_next_iteration(xp, n):
    """A view taken in the loop (``x[1:]``) and read the next iteration, after x changed."""
    x = xp.linspace(0, 1, 257, dtype=xp.float32)
    prev = x[1:]
    sums = []
    for i in range(n):
        y = prev * 0.5 + x[:-1]
        x = xp.concatenate([y, y[-1:]])
        prev = x[1:]
        sums.append(float(y.sum()))
    return np.array(sums), host(xp, x), host(xp, prev)


def strided_slice_updates(xp, n):
    """``x[::2] += 1``, ``x[1::2] *= 0.5``, a negative stride, all into the loop's input."""
    x = xp.arange(300, dtype=xp.float64) / 7
    s = []
    for i in range(n):
        x[::2] += 1
        x[1::2] *= 0.5
        x[::-3] -= 0.25
        x[5:50:7] = x[6:51:7] * 0.9
        s.append(float(x[10:20].sum()))
    return np.array(s), host(xp, x)


def setitem_uploaded_index(xp, n):
    """``x[idx] = v`` with an index array uploaded each iteration (distinct indices)."""
    rng = _rng(1)
    x = xp.zeros(500, dtype=xp.float32)
    out = []
    for i in range(n):
        idx = xp.asarray(rng.permutation(500)[:40])
        v = x[idx] * 0.5 + 1
        x[idx] = v * (i % 3)
        x[idx[:5]] += 2
        out.append(float(x.max()))
    return np.array(out), host(xp, x)


def out_arguments(xp, n):
    """``out=`` everywhere: into an input, into another array, into a strided view of an
    array whose other view is the operand."""
    a = xp.linspace(-1, 1, 200)
    b = xp.ones(200)
    c = xp.empty(200)
    vals = []
    for i in range(n):
        xp.add(a, b, out=c)
        xp.multiply(c, 0.5, out=a)
        xp.sin(a, out=b)
        xp.subtract(b, a, out=b)
        xp.abs(c[::2], out=c[1::2])
        xp.negative(c[1::2], out=c[::2])
        vals.append(float(c.sum()))
    return np.array(vals), host(xp, a), host(xp, b), host(xp, c)


def branch_on_value(xp, n):
    """A branch on a value read in the loop: the op sequence changes with the data."""
    x = xp.linspace(0.1, 2, 128, dtype=xp.float32)
    trace = []
    for i in range(n):
        m = float(x.max())
        if m > 1.5:
            x = x * 0.7
        else:
            x = x + 0.3
            x = xp.sqrt(x)
        trace.append(m)
    return np.array(trace), host(xp, x)


def dtype_change_midway(xp, n):
    """The carried array's dtype changes part-way (float32, float64, float16)."""
    x = xp.linspace(-3, 3, 96, dtype=xp.float32)
    out = []
    for i in range(n):
        if i == n // 2:
            x = x.astype(xp.float64)
        if i == 3 * n // 4:
            x = x.astype(xp.float16)
        x = x * 1.0001 + 0.5
        x = x - x.mean()
        out.append(float(x.std()))
    return np.array(out), host(xp, x)


def shape_change_midway(xp, n):
    """The carried array's shape changes part-way, once to a non-contiguous view."""
    x = xp.ones((32, 16))
    out = []
    for i in range(n):
        if i == n // 3:
            x = x[:, :-1]
        if i == 2 * n // 3:
            x = x.reshape(-1)
        y = (x * 2).sum(axis=-1)
        x = x + y[..., None] * 1e-3
        out.append(float(y.mean()))
    return np.array(out), host(xp, x)


def scalar_changes_type(xp, n):
    """A scalar parameter whose type changes: int, float, NumPy scalars, bool, complex."""
    x = xp.arange(100, dtype=xp.int32)
    kinds = [2, 2.0, np.float32(2), True, np.int64(2), 2 + 0j, 3, 3.0]
    out = []
    for i in range(n):
        alpha = kinds[i % len(kinds)] if i >= 10 else 2
        y = x * alpha + alpha
        out.append((str(y.dtype), host(xp, y)))
        x = (x + 1) % 1000
        float(y.real.sum())
    return out


def numpy_scalar_params(xp, n):
    """NumPy scalars are strong (NEP 50): float16 times np.float32(2) is float32."""
    x = xp.linspace(0, 1, 64).astype(xp.float16)
    k = xp.arange(64, dtype=xp.int8)
    params = [2.0, np.float32(2.0), np.float64(2.0), np.float16(2.0)]
    iparams = [3, np.int64(3), np.int8(3), np.uint8(3)]
    out = []
    for i in range(n):
        p = params[(i // 5) % 4]
        q = iparams[(i // 7) % 4]
        y = x * p
        z = k + q
        out.append((str(y.dtype), host(xp, y), str(z.dtype), host(xp, z)))
        float(y.sum())
    return out


def special_scalars(xp, n):
    """-0.0, NaN (both signs), inf, subnormals as scalar parameters."""
    base = [-0.0, 0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 5e-324]
    x = xp.asarray(np.array(base * 8, dtype=np.float64))
    scalars = [0.0, -0.0, math.nan, -math.nan, math.inf, -math.inf, 5e-324, -0.0, 1e308]
    out = []
    for i in range(n):
        s = scalars[(i // 2) % len(scalars)]
        y = x * s
        z = y + s
        w = xp.copysign(1.0, z)
        q = xp.maximum(x, s)
        r = xp.fmin(x, s)
        out.append((host(xp, z), host(xp, w), host(xp, q), host(xp, r)))
        out.append(fbits(float(w.sum())))
    return out


def stepped_parameter_guess(xp, n):
    """A parameter that steps -2.0, -1.0 and then is -0.0 where the step would guess 0.0;
    then ints that step to a float of the same value; then a bool after 0 and 1."""
    x = xp.ones(32)
    xi = xp.arange(32, dtype=xp.int32)
    out = []
    k = n // 2
    for i in range(n):
        p = -0.0 if i == k else float(i - k)
        y = 1.0 / (x * 0.0 + p)
        out.append(fbits(float(y.sum())))
    for i in range(n):
        q = float(i) if i >= n // 2 else i
        z = xi * q
        out.append((str(z.dtype), fbits(float(z.sum()))))
    for i in range(n):
        b = (i % 2 == 0) if i >= n // 2 else i % 2
        w = xi + b
        out.append((str(w.dtype), int(w.sum())))
    return out


def exception_mid_loop(xp, n):
    """Exceptions raised mid-loop and caught, then the loop goes on: a reshape, a
    broadcast, an integer parameter out of range, a float() of a size-2 array."""
    x = xp.arange(64, dtype=xp.float32)
    k8 = xp.arange(16, dtype=xp.int8)
    errs, vals = [], []
    for i in range(n):
        y = x * 1.5 - i
        if i % 9 == 4:
            try:   # (the pool raises a bad argument's error at the next sync point)
                float(y.reshape(7, 9)[0, 0])
            except ValueError:
                errs.append(("reshape", i))
        if i % 11 == 5:
            try:   # (not ``y = y + ...``: the pool's y would be the failed result)
                bad = y + xp.ones(63, dtype=xp.float32)
                float(bad[0])
            except ValueError:
                errs.append(("broadcast", i))
        try:
            z = k8 + (100 + i)
            vals.append(int(z.sum()))
        except OverflowError:
            errs.append(("overflow", i))
        if i % 13 == 7:
            try:
                float(y[:2])
            except TypeError:
                errs.append(("float", i))
        x = y * 0.5
        vals.append(float(x.sum()))
    return errs, np.array(vals, dtype=np.float64), host(xp, x)


def results_kept_in_list(xp, n):
    """Every iteration's result kept; an earlier one written in place later."""
    x = xp.linspace(0, 1, 50)
    kept = []
    for i in range(n):
        y = xp.exp(-x) + i
        kept.append(y)
        if i >= 3:
            kept[i - 3] += 1
        x = y * 0.1
        float(y[0])
    return host(xp, xp.stack(kept)), host(xp, x)


def del_and_reassign(xp, n):
    """``del`` of names, a swap, a name dropped only some iterations."""
    a = xp.linspace(1, 2, 80)
    b = xp.linspace(2, 3, 80)
    vals = []
    c = None
    for i in range(n):
        c = a * b + 1
        del a
        a, b = b, c / (xp.abs(c).max() + 1)
        if i % 5 == 0:
            del c
            c = None
        vals.append(float(b[0]))
    return np.array(vals), host(xp, a), host(xp, b)


def scalar_reads(xp, n):
    """``int()``, ``bool()``, ``float()``, ``.item()`` read in the loop and fed back."""
    x = xp.arange(50, dtype=xp.int64)
    k = 3
    out = []
    for i in range(n):
        y = (x * k) % 97
        k = int(y[i % 50]) + 1
        big = bool((y > 50).any())
        f = float(y.mean())
        it = y.max().item()
        x = y + (1 if big else 2)
        out.append((k, big, fbits(f), it, type(it).__name__))
    return out, host(xp, x)


def where_and_nonzero(xp, n):
    """``where`` with three arguments and with one (a data-dependent shape)."""
    x = xp.linspace(0, 1, 200)
    out = []
    for i in range(n):
        x = xp.where(x > 0.5, x * 0.3, x + 0.2)
        idx = xp.where(x > 0.4)[0]
        x[idx] *= 1.01
        out.append(int(xp.count_nonzero(x > 0.45)))
    return np.array(out), host(xp, x)


def fancy_gather_scatter(xp, n):
    """A gather by an uploaded index (repeats included) and ``add.at`` back."""
    rng = _rng(2)
    W = xp.asarray(rng.standard_normal((100, 8)))
    out = []
    for i in range(n):
        idx = xp.asarray(rng.integers(0, 100, 32))
        g = W[idx]
        grad = g * 0.1 + i * 1e-3
        xp.add.at(W, idx, -grad)
        out.append(float((W * W).sum()))
    return np.array(out), host(xp, W)


def fused_functions(xp, n):
    """``cupy.fuse`` functions (plain functions in NumPy) in a loop."""
    fuse = getattr(xp, "fuse", lambda f: f)

    @fuse
    def step(a, b):
        return a * 0.9 + b * 0.1

    @fuse
    def energy(a):
        return xp.sum(a * a)

    x = xp.linspace(0, 2, 100)
    y = xp.cos(x)
    out = []
    for i in range(n):
        x = step(x, y)
        y = step(y, xp.sin(x))
        out.append(float(energy(x)))
    return np.array(out), host(xp, x), host(xp, y)


def complex_mandelbrot(xp, n):
    """complex64 arithmetic, a mask counted into int32, ``z.imag *=`` and ``z.real[...] =``."""
    re = xp.linspace(-2, 1, 64, dtype=xp.float32)
    im = xp.linspace(-1.5, 1.5, 48, dtype=xp.float32)
    c = (re[None, :] + 1j * im[:, None]).astype(xp.complex64)
    z = xp.zeros_like(c)
    cnt = xp.zeros(c.shape, dtype=xp.int32)
    frac = []
    for i in range(n):
        z = z * z + c
        m = xp.abs(z) < 2
        cnt += m
        z = xp.where(m, z, 0)
        z.imag *= 0.999
        z.real[...] = xp.clip(z.real, -4, 4)
        if i % 5 == 0:
            frac.append(float(m.mean()))
    return np.array(frac), host(xp, z), host(xp, cnt), host(xp, xp.angle(z))


def nested_alternating_loops(xp, n):
    """Two inner loops with different bodies, taking turns inside an outer one."""
    x = xp.linspace(0, 1, 100)
    y = xp.linspace(1, 2, 100)
    a, b = [], []
    for outer in range(n // 10):
        for j in range(5):
            x = x * 0.9 + 0.1 * xp.tanh(y)
            a.append(float(x.sum()))
        for j in range(5):
            y = y - 0.05 * xp.cos(x) + j * 1e-3
            b.append(float((y * y).sum()))
    return np.array(a), np.array(b), host(xp, x), host(xp, y)


def same_array_twice_in_place(xp, n):
    """``x *= x``, ``add(x, x, out=x)``, ``x + x``, ``x -= x.mean()``."""
    x = xp.linspace(0.5, 1.5, 128)
    out = []
    for i in range(n):
        x *= x
        xp.add(x, x, out=x)
        y = x + x
        x -= x.mean()
        x /= xp.abs(x).max() + 1
        x += 1
        out.append(float(y.sum()))
    return np.array(out), host(xp, x)


def overlapping_self_writes(xp, n):
    """Writes whose source overlaps their target: ``x += x[::-1]``, ``x[1:] = x[:-1]``."""
    x = xp.linspace(0, 1, 65)
    out = []
    for i in range(n):
        x += x[::-1]
        x[1:] = x[:-1] * 0.5
        x[:-2] += x[2:]
        x /= float(x.max()) + 1
        out.append(float(x.sum()))
    return np.array(out), host(xp, x)


def broadcast_changing_shape(xp, n):
    """Broadcasting to a shape that changes every iteration (five shapes in turn)."""
    x = xp.linspace(0, 1, 40)
    w = xp.ones(8)
    out = []
    for i in range(n):
        k = 3 + i % 5
        y = x[:, None] * w[None, :k]
        s = y.sum(axis=0)
        w[:k] += s * 1e-3
        out.append(float(s.sum()))
    return np.array(out), host(xp, w)


def random_reseeded(xp, n):
    """``cupy.random`` draws with a re-seed mid-way, and a RandomState's (pool only: NumPy
    draws other numbers)."""
    xp.random.seed(1)
    rs = xp.random.RandomState(5)
    x = xp.zeros(100)
    out = []
    for i in range(n):
        if i == n // 2:
            xp.random.seed(42)
        r = xp.random.rand(100)
        g = rs.standard_normal(100)
        x = x * 0.9 + r + 0.01 * g
        out.append(float(x.sum()))
    return np.array(out), host(xp, x)


def host_random_uploaded(xp, n):
    """Host draws uploaded each iteration, then the same host array mutated in place and
    uploaded again (the same NumPy object every time)."""
    rng = _rng(3)
    buf = np.zeros(64)
    x = xp.zeros(64)
    out = []
    for i in range(n):
        d = xp.asarray(rng.standard_normal(64))
        buf[:] = i
        e = xp.asarray(buf)
        x = x * 0.5 + d + e
        out.append(float(x.sum()))
    return np.array(out), host(xp, x)


def set_from_mutated_host(xp, n):
    """``x.set(host)`` from one NumPy array mutated in place every iteration."""
    buf = np.arange(32, dtype=np.float32)
    x = xp.zeros(32, dtype=xp.float32)
    out = []
    for i in range(n):
        buf *= 1.01
        buf[i % 32] = -i
        if xp is np:
            x[...] = buf
        else:
            x.set(buf)
        y = x * 2
        out.append(float(y.sum()))
    return np.array(out), host(xp, x)


def setitem_from_mutated_host(xp, n):
    """``x[:] = host`` and ``x[a:b] = host`` from one NumPy array mutated in place. CuPy
    refuses a NumPy array there (ValueError: its fill takes scalars; the pool on a GPU says
    so too), the pool's NumPy device takes it as NumPy does: each side's outcome is kept."""
    buf = np.arange(32, dtype=np.float32)
    x = xp.zeros(32, dtype=xp.float32)
    out = []
    for i in range(n):
        buf *= 1.01
        buf[i % 32] = -i
        try:
            x[:] = buf
            x[4:8] = buf[:4]
            y = x * 2
            out.append(float(y.sum()))
        except ValueError:
            out.append("refused")
    return out, host(xp, x)


def two_iterations_back(xp, n):
    """A result from two iterations earlier read, and written in place."""
    hist = [xp.ones(100), xp.full(100, 2.0)]
    out = []
    for i in range(n):
        c = hist[-2] * 0.5 + hist[-1] * 0.25 + i
        hist.append(c)
        if len(hist) > 3:
            hist.pop(0)
        hist[0] *= 0.5
        out.append(float(c[i % 4]))
    return np.array(out), [host(xp, h) for h in hist]


def reductions_axes(xp, n):
    """Reductions with axis and keepdims, argmax, prod, var(ddof), sum(dtype)."""
    rng = _rng(4)
    X = xp.asarray(rng.standard_normal((20, 30)).astype(np.float32))
    out = []
    for i in range(n):
        m = X.mean(axis=1, keepdims=True)
        s = X.std(axis=0, keepdims=True)
        X = (X - m) / (s + 1)
        am = X.argmax(axis=0)
        mx = X.max(axis=(0, 1))
        t = X.sum(axis=-1, dtype=xp.float64)
        p = xp.prod(X[:3] * 0.1 + 1, axis=0)
        v = X.var(ddof=1)
        X = X + am[None, :].astype(xp.float32) * 1e-3
        out.append((fbits(float(mx)), host(xp, t), host(xp, p), fbits(float(v))))
    return out, host(xp, X)


def astype_cumsum_sort(xp, n):
    """sort, argsort (stable), cumsum of astype, searchsorted, unique of a floor."""
    x = xp.asarray(_rng(5).random(120).astype(np.float32) * 10)
    out = []
    for i in range(n):
        y = xp.sort(x)
        z = xp.cumsum(y.astype(xp.float64))
        idx = xp.argsort(x, kind="stable")
        x = (x * 1.3 + z[idx].astype(xp.float32) * 1e-4) % 10
        pos = xp.searchsorted(y, 5.0)
        u = xp.unique(xp.floor(x))
        out.append((int(pos), int(u.size), fbits(float(z[-1]))))
    return out, host(xp, x)


def reshape_ravel_views_in_place(xp, n):
    """Writes through ``reshape``, ``ravel``, ``.T`` views of the loop's array."""
    x = xp.arange(48.0)
    out = []
    for i in range(n):
        v = x.reshape(6, 8)
        v[2] += 1
        x.ravel()[::5] *= -1
        v.T[3, :] = v.T[3, :] * 0.5
        x.reshape(4, 12)[:, 0] = i % 3
        out.append(float(x.sum()))
    return np.array(out), host(xp, x)


def integer_wraparound(xp, n):
    """uint8 and int32 arithmetic that wraps, shifts and xor."""
    x = xp.arange(64, dtype=xp.uint8)
    acc = xp.arange(64, dtype=xp.int32)
    out = []
    for i in range(n):
        x = x * 3 + 7
        acc = acc * 1103515245 + 12345
        acc ^= acc << 5
        acc = acc >> 1
        y = x.astype(xp.int8) + 100
        out.append((int(acc.sum()), int(y.sum()), int(x.max())))
    return out, host(xp, x), host(xp, acc)


def boolean_masks(xp, n):
    """Boolean masks: assignment, in-place through a mask, selection of changing size,
    putmask."""
    x = xp.asarray(_rng(6).random(200))
    out = []
    for i in range(n):
        thr = float(x.mean())
        m = x > thr
        sel = x[m]
        x[m] = sel * 0.5
        x[~m] *= 1.1
        xp.putmask(x, x > 0.95, 0.95)
        out.append((int(m.sum()), fbits(thr), sel.shape[0]))
    return out, host(xp, x)


def concatenate_results(xp, n):
    """An array grown by concatenate every iteration (its shape never repeats), and every
    result concatenated at the end."""
    acc = xp.zeros(3)
    y = xp.ones(3)
    parts = []
    for i in range(n):
        y = y * 0.99 + acc[-3:]
        acc = xp.concatenate([acc, y[:3]])
        parts.append(y * 2)
        float(acc.sum())
    return host(xp, acc), host(xp, xp.concatenate(parts))


def no_sync_in_place(xp, n):
    """A loop with no sync point (cut into pieces), in place, keeping every other result."""
    x = xp.linspace(0, 1, 256)
    keep = []
    for i in range(n * 2):
        x = x * 0.99 + 0.01
        x[::4] += 1e-3
        y = xp.tanh(x)
        if i % 2 == 0:
            keep.append(y)
    return host(xp, xp.stack(keep)), host(xp, x)


def only_views_of_results_kept(xp, n):
    """Only views of each result kept (the result itself dropped): ``y[::2]``, ``.T``,
    ``.real``, ``reshape``."""
    x = xp.linspace(0, 1, 64)
    z = xp.zeros(64, dtype=xp.complex128)
    kept = []
    for i in range(n):
        y = xp.exp(x) - i
        kept.append(y[::2])
        kept.append((y.reshape(8, 8) * 2).T)
        z = z * 0.5 + (y + 1j)
        kept.append(z.real)
        x = y * 0.01
        float(x.sum())
        del y
    return [host(xp, k) for k in kept]


def aliased_inputs_alternating(xp, n):
    """``a += b; c = a * b`` where b is sometimes a itself, sometimes another array."""
    a = xp.linspace(0, 1, 50)
    other = xp.linspace(1, 0, 50)
    out = []
    for i in range(n):
        b = a if i % 3 == 0 else other
        a += b
        c = a * b
        a /= float(xp.abs(a).max())
        out.append(float(c.sum()))
    return np.array(out), host(xp, a), host(xp, other)


def overlapping_views_as_inputs(xp, n):
    """Two views of one array made before the loop, one written, the other read after."""
    base = xp.linspace(0, 1, 100)
    ev = base[::2]
    first = base[:50]
    out = []
    for i in range(n):
        ev += 1
        y = first * 2
        ev *= 0.5
        out.append(float(y.sum()))
    return np.array(out), host(xp, base)


def zero_d_arrays_as_operands(xp, n):
    """A 0-d result used as the next iteration's operand and as a setitem value."""
    x = xp.linspace(1, 2, 40)
    s = x.sum()
    out = []
    for i in range(n):
        x = x / s * 10
        x[0] = s
        s = x.sum()
        out.append(s.item())
    return out, host(xp, x)


def matmul_mixed(xp, n):
    """matmul and outer (eager between graphs) among elementwise ops, a norm read."""
    rng = _rng(7)
    W = xp.asarray(rng.standard_normal((32, 32)) * 0.1)
    b = xp.zeros(32)
    x = xp.asarray(rng.standard_normal(32))
    out = []
    for i in range(n):
        h = xp.tanh(x @ W + b)
        W -= 0.01 * xp.outer(h, x)
        b += 0.001 * h
        x = h[::-1].copy()
        out.append(float(xp.linalg.norm(W)))
    return np.array(out), host(xp, W), host(xp, b)


def tuple_results(xp, n):
    """Functions of several results (divmod, frexp, modf) and ``nonzero``'s tuple used to
    index in place."""
    x = xp.linspace(0.1, 20, 90)
    out = []
    for i in range(n):
        q, r = xp.divmod(x, 3.5)
        fr, ex = xp.frexp(x)
        fpart, ipart = xp.modf(x / 3)
        x = q + r * 0.9 + fr + ex * 0.01 + fpart + ipart * 0.1
        nz = xp.nonzero(x > 8)
        x[nz] -= 1
        out.append((fbits(float(x.sum())), int(nz[0].size)))
    return out, host(xp, x)


def copyto_fill_put_clip(xp, n):
    """copyto with where=, fill with a changing value, put, clip into itself with bounds
    whose type changes."""
    x = xp.linspace(0, 1, 60)
    y = xp.zeros(60)
    z = xp.empty(60)
    idx = xp.arange(0, 60, 7)
    out = []
    for i in range(n):
        xp.copyto(y, x, where=x > 0.5)
        z.fill((i % 4) * 0.5)
        y.put(idx, z[:idx.size] * 0.01)
        lo, hi = (0, 1) if i % 2 else (0.05, 0.9)
        xp.clip(y, lo, hi, out=y)
        x = (x + y) * 0.6
        out.append(float(y.sum()))
    return np.array(out), host(xp, x), host(xp, y), host(xp, z)


def fortran_and_strided_inputs(xp, n):
    """A Fortran-ordered array, its transpose and strided views as the loop's inputs."""
    F = xp.asfortranarray(xp.arange(60.0).reshape(6, 10))
    out = []
    for i in range(n):
        t = F.T * 0.5
        s = F[::2, ::3] + 1
        F[:, 1::2] += 1
        F *= 0.99
        c = xp.ascontiguousarray(F[1:, ::2])
        out.append((fbits(float(c.sum())), fbits(float(t[3, 2])), fbits(float(s.sum()))))
    return out, host(xp, F)


def earlier_arrays_read_and_written(xp, n):
    """Arrays of earlier iterations downloaded and written between replays; the current
    one written outside the loop's body now and then."""
    x = xp.linspace(0, 1, 100)
    hist = []
    out = []
    for i in range(n):
        x = x * 1.01 + 0.001
        hist.append(x)
        if i % 7 == 6:
            out.append(host(xp, hist[-4]))
            hist[-4][0] = -1.0
        if i % 5 == 0:
            x[3] = 100.0
        out.append(float(x.sum()))
    return out, [host(xp, h) for h in hist[-10:]]


def in_place_input_read_after(xp, n):
    """A step that writes its input in place (run ahead), the input read through a view
    made before the loop once the loop ends, and then used again."""
    x = xp.linspace(0, 1, 128)
    xv = x[::2]
    out = []
    for i in range(n):
        x += 1
        x *= 0.5
        out.append(float(x.sum()))
    after = host(xp, xv)
    x -= 0.25
    return np.array(out), after, host(xp, x)


def power_with_changing_exponent(xp, n):
    """``x ** p`` with the exponent changing (never held), beside a fixed one (held)."""
    x = xp.linspace(0.5, 1.5, 50)
    ps = [2, 0.5, -1.0, 3, 2.0, 1]
    out = []
    for i in range(n):
        y = (x + 0.5) ** ps[i % len(ps)]
        w = (x + 0.25) ** 2
        x = (y + w) / (y + w).max()
        out.append(float(x.sum()))
    return np.array(out), host(xp, x)


def integer_division_by_zero(xp, n):
    """Integer ``//`` and ``%`` with negatives and zeros (NumPy's 0 with a warning);
    float ``%`` by zero."""
    x = xp.arange(-20, 20, dtype=xp.int64)
    d = xp.asarray(np.array([0, 1, -3, 5] * 10, dtype=np.int64))
    out = []
    with np.errstate(all="ignore"):
        for i in range(n):
            q = x // d
            r = x % d
            f = (x * 1.0) % (d * 0.0 + (i % 3))
            x = (q + r + i) % 41 - 20
            out.append((int(q.sum()), int(r.sum()), host(xp, f)))
    return out


def keepdims_broadcast_back(xp, n):
    """Softmax-like steps on a 2-D array with keepdims reductions and a changing
    temperature (float, then int)."""
    X = xp.asarray(_rng(8).standard_normal((16, 10)))
    out = []
    for i in range(n):
        t = 1 + (i % 4) if i % 2 else 1.0 + (i % 4) * 0.5
        e = xp.exp((X - X.max(axis=1, keepdims=True)) / t)
        p = e / e.sum(axis=1, keepdims=True)
        X = X + p * 0.1 - p.mean(axis=0)
        out.append(fbits(float(p[0, 0])))
    return out, host(xp, X)


def name_rebinding_same_handle_order(xp, n):
    """Ping-pong buffers: the two arrays take turns as input and ``out=``."""
    a = xp.linspace(0, 1, 100)
    b = xp.empty(100)
    out = []
    for i in range(n):
        xp.multiply(a, 0.5, out=b)
        b += 0.25
        a, b = b, a
        out.append(float(a.sum()))
    return np.array(out), host(xp, a), host(xp, b)


def empty_like_and_uninitialised_reads(xp, n):
    """zeros_like / ones_like / full_like made in the loop, filled, and the last one kept
    (values written before they are read)."""
    x = xp.linspace(0, 1, 50, dtype=xp.float32)
    out = []
    for i in range(n):
        z = xp.zeros_like(x)
        o = xp.ones_like(x, dtype=xp.float64)
        f = xp.full_like(x, i % 3)
        z[::2] = x[::2]
        x = z + o.astype(xp.float32) * 0.1 + f * 1e-3
        out.append(float(x.sum()))
    return np.array(out), host(xp, x)


def keys_of_a_changing_literal(xp, n):
    """Literal arguments (axis, slice bounds, dtype) changing each iteration."""
    X = xp.arange(24.0).reshape(2, 3, 4)
    out = []
    for i in range(n):
        ax = i % 3
        s = X.sum(axis=ax)
        j = i % 4
        X[..., j:j + 1] += s.mean()
        X = X / X.max()
        dt = (xp.float32, xp.float64)[i % 2]
        out.append((fbits(float(s.astype(dt).sum())), str(s.shape)))
    return out, host(xp, X)


def max_min_with_nan(xp, n):
    """NaNs carried through max/min/nanmax/argmax and comparisons."""
    x = xp.linspace(0, 1, 30)
    x[5] = math.nan
    out = []
    for i in range(n):
        m = x.max()
        nm = xp.nanmax(x)
        am = xp.argmax(x)
        nn = xp.nanargmin(x)
        x = xp.where(xp.isnan(x), x, x * 0.9 + 0.05)
        out.append((fbits(float(m)), fbits(float(nm)), int(am), int(nn)))
    return out, host(xp, x)


def nan_sign_in_function_arguments(xp, n):
    """NaN and -NaN (and -0.0) as a function's scalar argument, a fill value, a clip bound:
    the sign of a NaN is kept by NumPy and CuPy alike."""
    nan = math.nan
    x = xp.asarray(np.array([1.0, -2.0, 0.5, -0.0]))
    out = []
    for i in range(n):
        s = nan if (i // 10) % 2 == 0 else -nan
        a = xp.add(x, s)
        b = xp.full(4, s)
        c = xp.empty(4)
        c.fill(s)
        d = xp.maximum(x, s)
        out.append((fbits(float(a[0])), fbits(float(b[0])), fbits(float(c[0])),
                    fbits(float(d[1]))))
    return out


def download_every_few_iterations(xp, n):
    """The loop's array downloaded every seventh iteration between its ops and its read
    (a sync point inside the body some iterations)."""
    x = xp.linspace(0, 1, 100)
    out = []
    for i in range(n):
        x = x * 1.01 + 0.001
        if i % 7 == 6:
            out.append(host(xp, x))
        out.append(float(x.sum()))
    return out


def aliases_made_by_functions(xp, n):
    """Arrays that alias their argument (asarray, astype(copy=False), view, ravel,
    ascontiguousarray, reshape, split) written in place, the original read."""
    x = xp.linspace(0, 1, 64)
    out = []
    for i in range(n):
        y = x * 1.5 + 0.25
        z = xp.asarray(y)
        w = y.astype(y.dtype, copy=False)
        v = y.view()
        r = xp.ravel(y)
        c = xp.ascontiguousarray(y)
        m = y.reshape(8, 8)
        parts = xp.split(y, 4)
        z += 1
        w *= 0.5
        v -= 0.125
        r[0] = 7.0
        c[1] = -1.0
        m[2, 3] = 0.0
        parts[3][:] = parts[3] * 2
        x = y / float(y.max())
        out.append(float(y.sum()))
    return np.array(out), host(xp, x)


def param_overflows_its_dtype(xp, n):
    """Scalars that overflow a float16/float32 array's dtype (inf), and an int8 array given
    an int out of its range (OverflowError, caught)."""
    h = xp.linspace(-1, 1, 16).astype(xp.float16)
    f = xp.linspace(-1, 1, 16).astype(xp.float32)
    k = xp.arange(16, dtype=xp.int8)
    hs = [70000, 1e5, 65504.0, 65520.0, 2.0, 1e-8]
    fs = [1e39, 3.4028235e38, 3.4028236e38, 1e-46, 2.0]
    out = []
    for i in range(n):
        a = h * hs[i % len(hs)] + hs[(i + 1) % len(hs)]
        b = f * fs[i % len(fs)]
        out.append((host(xp, a), host(xp, b)))
        try:
            c = k + (120 + i % 12)
            out.append(int(c.sum()))
        except OverflowError:
            out.append("overflow")
    return out


def data_dependent_error(xp, n):
    """A worker-side error that depends on the data: a mask selection of changing size
    broadcast against five elements (caught, the loop goes on)."""
    rng = _rng(9)
    w = xp.arange(5.0)
    x = xp.asarray(rng.random(20))
    out = []
    for i in range(n):
        t = 0.9 if i >= 30 and i % 7 == 0 else 0.1
        sel = x[x > t]
        try:
            z = sel[:5] * w
            out.append(float(z.sum()))
        except ValueError:
            out.append("broadcast")
        x = (x * 1.7 + 0.13) % 1.0
    return out, host(xp, x)


def mask_select_run_ahead(xp, n):
    """A body with a data-dependent selection and an in-place step on its input (run
    ahead), the selection's size read."""
    x = xp.linspace(0, 1, 300)
    out = []
    for i in range(n):
        sel = x[x > 0.5]
        x *= 1.003
        x -= 0.001
        out.append((int(sel.size), fbits(float(sel.sum()))))
    return out, host(xp, x)


def stepping_float_parameters(xp, n):
    """Parameters that step as floats whose sums do not follow a+(a-b) exactly (0.1*i,
    i/3), ints that step, and a power of two step."""
    x = xp.ones(40)
    out = []
    for i in range(n):
        x = x * 0.999 + 0.1 * i
        x = x - i / 3
        x = x + (i - 25)
        x = x * 2.0 ** -(i % 3)
        out.append(fbits(float(x.sum())))
    return out, host(xp, x)


def input_read_and_dropped_between(xp, n):
    """An in-place step run ahead; the input read by another stretch every fourth
    iteration; replaced by a fresh upload near the end; deleted and remade."""
    x = xp.linspace(0, 1, 64)
    out = []
    for i in range(n):
        x += 0.5
        x *= 0.75
        out.append(float(x.sum()))
        if i % 4 == 3:
            out.append(float(x[5]))
        if i == n - 10:
            x = xp.asarray(np.linspace(2, 3, 64))
        if i == n - 5:
            keep = host(xp, x)
            del x
            x = xp.asarray(keep)
    return out, host(xp, x)


def jacobi_until_converged(xp, n):
    """A while loop that stops on ``bool(diff > tol)``: Jacobi on a 1-D Poisson problem,
    at least *n* sweeps."""
    u = xp.zeros(66)
    f = xp.ones(66) * 1e-3
    sweeps = 0
    diffs = []
    while True:
        new = u.copy()
        new[1:-1] = 0.5 * (u[:-2] + u[2:] + f[1:-1])
        diff = xp.abs(new - u).max()
        u = new
        sweeps += 1
        if sweeps % 10 == 0:
            diffs.append(float(diff))
        if not bool(diff > 1e-9) or sweeps >= 4 * n:
            break
    return sweeps, np.array(diffs), host(xp, u)


def python_sum_and_comparisons(xp, n):
    """Python's ``sum()`` over arrays (``0 + a``), ``if x.max() > ...`` and ``len``."""
    parts = [xp.linspace(0, 1, 10) * k for k in range(4)]
    x = xp.zeros(10)
    out = []
    for i in range(n):
        total = sum(parts)
        x = x * 0.5 + total * 0.01
        if x.max() > 0.05:
            x = x - 0.01
        out.append((len(x), fbits(float(x.sum()))))
    return out, host(xp, x)


def multi_result_functions(xp, n):
    """Functions returning several arrays (meshgrid, gradient, array_split) in the loop."""
    x = xp.linspace(0, 1, 12)
    y = xp.linspace(1, 2, 8)
    out = []
    for i in range(n):
        gx, gy = xp.meshgrid(x, y)
        d0, d1 = xp.gradient(gx * gy + i * 0.01)
        pieces = xp.array_split(x, 5)
        x = x + d1[0] * 0.01 + pieces[0].sum() * 1e-3
        out.append(fbits(float(d0.sum() + d1.sum())))
    return out, host(xp, x)


def long_body(xp, n):
    """A body of 40 ops (more than goes early in its first sightings), then a read."""
    x = xp.linspace(0, 1, 128, dtype=xp.float32)
    y = xp.linspace(1, 0, 128, dtype=xp.float32)
    out = []
    for i in range(n):
        for k in range(20):
            x = x * 0.999 + y * 0.001
            y = y - x * (1e-4 * (k + 1))
        out.append(float(x.sum() + y.sum()))
    return np.array(out), host(xp, x), host(xp, y)


def row_iteration_in_place(xp, n):
    """``for row in X: row *= ...`` (each row a view) then a read."""
    X = xp.arange(24.0).reshape(6, 4)
    out = []
    for i in range(n):
        for j, row in enumerate(X):
            row *= 0.9 + 0.01 * j
        X[:, 0] += 1
        out.append(float(X.sum()))
    return np.array(out), host(xp, X)


def tolist_and_views_downloaded(xp, n):
    """``tolist()`` and downloads of non-contiguous views inside the loop."""
    X = xp.arange(30.0).reshape(5, 6)
    out = []
    for i in range(n):
        X = X * 1.01 - 0.3
        out.append(X[::2, 1::2].T.tolist() if xp is not np else X[::2, 1::2].T.tolist())
        out.append(host(xp, X[:, ::-1][1]))
    return out


def random_shuffle_and_choice(xp, n):
    """``random.shuffle`` in place, ``permutation``, ``choice`` (pool only)."""
    xp.random.seed(7)
    x = xp.arange(50.0)
    out = []
    for i in range(n):
        xp.random.shuffle(x)
        p = xp.random.permutation(10)
        c = xp.random.choice(50, 5)
        x = x + p.sum() * 0.001
        out.append((fbits(float(x[0])), int(c.sum())))
    return out, host(xp, x)


def split_pieces_written(xp, n):
    """``a, b = split(y, 2)`` (views of y), one piece written in place, y read; then (second
    half) a piece of ``array_split`` read after y is written."""
    x = xp.ones(8)
    out = []
    for i in range(n):
        y = x * 2
        a, b = xp.split(y, 2)
        b += 1
        out.append(float(y.sum()))
        x = y / 2
    for i in range(n):
        y = x * 2
        parts = xp.array_split(y, 3)
        y += 1
        out.append(float(parts[2].sum()))
        x = y / 2
    return out, host(xp, x)


def view_functions_written(xp, n):
    """Views made by functions and methods (squeeze, expand_dims, moveaxis, swapaxes, flip,
    rot90, real, reshape, atleast_2d, T, [...]) written in place, their base read."""
    makers = [
        lambda y: xp.squeeze(y[None]), lambda y: xp.expand_dims(y, 0),
        lambda y: xp.moveaxis(y.reshape(2, 4), 0, 1), lambda y: xp.swapaxes(y.reshape(2, 4), 0, 1),
        lambda y: xp.flip(y), lambda y: xp.rot90(y.reshape(2, 4)), lambda y: xp.real(y),
        lambda y: xp.reshape(y, (4, 2)), lambda y: xp.atleast_2d(y), lambda y: y.reshape(2, 4).T,
        lambda y: y[...], lambda y: xp.hsplit(y, 2)[1]]
    x = xp.arange(8.0)
    out = []
    for i in range(n):
        y = x * 2
        v = makers[(i // 6) % len(makers)](y)
        v += 1
        out.append(float(y.sum()))
        x = y / 2
    return out, host(xp, x)


def out_forms(xp, n):
    """``out`` by position, by keyword, as a tuple; two outputs (modf, divmod); a reduction's
    and a ufunc method's out; into views of one array."""
    a = xp.linspace(0, 1, 8)
    o = xp.zeros(8)
    o2 = xp.zeros(8)
    M = xp.arange(64.0).reshape(8, 8) / 64
    O = xp.zeros((8, 8))
    out = []
    for i in range(n):
        a = a * 0.9 + 0.05
        xp.add(a, 1.0, o)
        xp.modf(a * 1.3 + o, o, o2)
        xp.divmod(o, 0.7, out=(o2, o))
        xp.sum(M * a, axis=0, out=o2)
        xp.add.accumulate(o2, out=o2)
        xp.dot(M.T, M * a[0], O)
        xp.negative(a[::2], o[1::2])
        xp.clip(o, 0.1, 5.0, o)
        out.append((fbits(float(o.sum())), fbits(float(o2.sum())), fbits(float(O.sum()))))
    return out


def shape_attribute_assigned(xp, n):
    """``x.shape = ...`` on the loop's array (the same array, another shape) between
    iterations, the body's ops following the shape."""
    x = xp.arange(64.0)
    out = []
    for i in range(n):
        x.shape = (8, 8) if (i // 4) % 2 else (64,)
        y = x * 0.5 + x.T
        x = y.copy()
        out.append((x.shape, fbits(float(y.sum()))))
    return out, host(xp, x)


def overlapping_inputs_alternating(xp, n):
    """``a += b`` where a and b are overlapping views of one array in some iterations and
    separate arrays in the others."""
    base = xp.linspace(0, 1, 100)
    other = xp.linspace(1, 2, 50)
    out = []
    for i in range(n):
        a = base[:50]
        b = base[25:75] if (i // 5) % 2 else other
        a += b
        c = a * b
        base /= float(xp.abs(base).max())
        out.append(float(c.sum()))
    return np.array(out), host(xp, base)


def late_input_switches(xp, n):
    """The body's last ops use an array and a scalar that change only every tenth
    iteration: an early replay guessed from the last run must be undone then."""
    x = xp.linspace(0, 1, 64)
    w1 = xp.linspace(1, 2, 64)
    w2 = xp.linspace(2, 1, 64)
    out = []
    for i in range(n):
        w = w1 if (i // 10) % 2 == 0 else w2
        c = 0.5 if (i // 10) % 3 else -0.0
        y = xp.tanh(x) * 0.9
        y = y + 0.01
        y = y * 1.001
        y = y - 0.002
        z = y * w + c
        x = z / float(z.max())
        out.append(fbits(float(z.sum())))
    return out, host(xp, x)


def empty_reduction_error(xp, n):
    """``max`` of a selection that is empty in some iterations (ValueError, from the
    worker: the selection's size is the data's), caught."""
    x = xp.linspace(0, 1, 20)
    out = []
    for i in range(n):
        t = 2.0 if i >= 30 and i % 7 == 5 else 0.5
        sel = x[x > t]
        try:
            m = sel.max()
            out.append(float(m))
        except ValueError:
            out.append("empty")
        x = (x * 1.3 + 0.07) % 1.0
    return out, host(xp, x)


def repr_and_format_reads(xp, n):
    """``repr``/``str`` of arrays and f-strings of their values inside the loop."""
    x = xp.linspace(0, 1, 6)
    out = []
    for i in range(n):
        x = x * 1.1 - 0.05
        text = repr(host(xp, x)) if xp is np else repr(x.get())
        out.append(text)
        out.append(f"{float(x.sum()):.6f} {str(x[:2] if xp is np else x[:2].get())}")
    return out


def precomputed_views_rotating(xp, n):
    """Views of one array made before the loop, a different one each iteration written in
    place while the whole array is read: inputs that alias each other."""
    base = xp.linspace(0, 1, 60)
    views = [base[k:k + 20] for k in range(0, 50, 10)]
    out = []
    for i in range(n):
        v = views[i % len(views)]
        v += 1
        w = base * 0.5
        v *= 0.5
        out.append((fbits(float(w.sum())), fbits(float(base.sum()))))
    return out, host(xp, base)


def numpy_scalar_signed_zeros(xp, n):
    """NumPy scalar parameters (float32, float64, complex128) whose zero changes sign
    every ten iterations, used first and last in the body."""
    x = xp.ones(8, dtype=xp.float32)
    out = []
    for i in range(n):
        neg = (i // 10) % 2 == 1
        p32 = np.float32(-0.0) if neg else np.float32(0.0)
        p64 = np.float64(-0.0) if neg else np.float64(0.0)
        pc = np.complex128(complex(0.0, -0.0)) if neg else np.complex128(0j)
        a = 1.0 / (x * p32)
        b = xp.tanh(x) * 0.5 + 0.25
        b = b * 2.0 - 0.1
        c = 1.0 / (b * p64)
        d = (b + pc) * 1.0
        out.append((fbits(float(a.sum())), fbits(float(c.sum())), fbits(float(d.imag.sum()))))
    return out


def huge_integer_parameters(xp, n):
    """Python ints too large for the array's dtype: int64 + 2**63 and uint8 + (-1) raise
    OverflowError (caught); float32 + 10**39 is inf; float32 + 10**400 raises."""
    i64 = xp.arange(4, dtype=xp.int64)
    u8 = xp.arange(4, dtype=xp.uint8)
    f32 = xp.ones(4, dtype=xp.float32)
    ks = [1, 2 ** 62, 2 ** 63, -(2 ** 63), 5]
    out = []
    for i in range(n):
        k = ks[i % len(ks)] if i >= 20 else 1
        for arr, val in ((i64, k), (u8, -1 if i % 9 == 8 else 1),
                         (f32, 10 ** 39 if i % 4 == 0 else (10 ** 400 if i % 11 == 10 else 3))):
            try:
                out.append(host(xp, arr + val))
            except OverflowError:
                out.append("overflow")
        out.append(float(f32.sum()))
    return out


def no_sync_period_three(xp, n):
    """No sync point: a body that takes three forms in turn, every result kept; read at
    the end."""
    x = xp.linspace(0, 1, 128)
    kept = []
    for i in range(3 * n):
        if i % 3 == 0:
            x = x * 0.99 + 0.01
        elif i % 3 == 1:
            x = xp.sqrt(x + 1.0) - 0.5
        else:
            x = x - x.mean() * 0.1
        kept.append(x)
    return host(xp, xp.stack(kept)), host(xp, x)


def no_sync_history_in_place(xp, n):
    """No sync point: ``hist[-3] += hist[-1]`` writes a result of two iterations before."""
    hist = [xp.ones(32), xp.ones(32) * 2, xp.ones(32) * 3]
    for i in range(2 * n):
        y = hist[-1] * 0.5 + hist[-2] * 0.25
        hist[-3] += y * 0.01
        hist.append(y)
    return host(xp, xp.stack(hist))


def no_sync_with_one_read_midway(xp, n):
    """No sync point but one read at the half-way iteration and a download of an early
    result at three quarters."""
    x = xp.linspace(0, 1, 64)
    kept = []
    mid = None
    early = None
    for i in range(2 * n):
        x = xp.cos(x) * 0.5 + 0.25
        kept.append(x)
        if i == n:
            mid = float(x.sum())
        if i == 3 * n // 2:
            early = host(xp, kept[5])
    return mid, early, host(xp, xp.stack(kept))


def unsendable_int_mid_loop(xp, n):
    """A Python int too large to send (10**400) given to an operator once, mid-loop,
    caught where NumPy raises it (at the op), the loop going on; the same through a
    temporary that is downloaded."""
    x = xp.ones(4, dtype=xp.float32)
    log = []
    for i in range(n):
        big = 10 ** 400 if i == n // 2 else 3
        try:
            y = x + big
        except OverflowError:
            log.append(("at the op", i))
        try:
            log.append(fbits(float(x.sum())))
        except OverflowError:
            log.append(("at the next read", i))
    for i in range(n):
        big = 10 ** 400 if i == n // 2 else 3
        try:
            host(xp, x + big)
        except OverflowError:
            log.append(("temporary", i))
        try:
            log.append(fbits(float(x.sum())))
        except Exception as e:  # noqa: BLE001
            log.append((type(e).__name__, i))
    return log


_ADD_SOURCE = r"""
extern "C" __global__ void axpy(const double* x, double* y, double a, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"""


def user_kernels_in_loop(xp, n):
    """ElementwiseKernel, ReductionKernel and RawKernel (writing its argument in place) in
    a loop; where a kernel is refused (the NumPy device: NotImplementedError at the next
    sync point) or xp is NumPy, the same arithmetic as ops (the results then agree with
    NumPy's, not bitwise with a GPU's kernel)."""
    kernels = None
    if xp is not np and hasattr(xp, "ElementwiseKernel"):
        kernels = (xp.ElementwiseKernel("float64 x, float64 y", "float64 z",
                                        "z = x * 0.5 + y", "half_plus"),
                   xp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = a", "0", "sumsq"),
                   xp.RawKernel(_ADD_SOURCE, "axpy"))
    x = xp.linspace(0, 1, 256)
    y = xp.zeros(256)
    out = []
    for i in range(n):
        done = False
        if kernels is not None:
            try:
                z = kernels[0](x, y)
                s = kernels[1](z)
                kernels[2]((1,), (256,), (z, y, np.float64(0.25), np.int32(256)))
                out.append(fbits(float(s)))
                done = True
            except NotImplementedError:
                kernels = None
        if not done:
            z = x * 0.5 + y
            s = (z * z).sum()
            y += 0.25 * z
            out.append(fbits(float(s)))
        x = xp.tanh(z)
    return out, host(xp, x), host(xp, y)


def aliasing_inputs_in_place(xp, n):
    """Arrays made before the loop that share memory (a view, overlapping views, a reshape,
    a transpose), one written in place by an operator, another read after it in the same
    stretch; the pair changes every fifteen iterations."""
    base = xp.linspace(0, 1, 60)
    v = base[:20]
    v1, v2 = base[:20], base[10:30]
    r = base.reshape(6, 10)
    t = base.reshape(6, 10).T
    out = []
    for i in range(n):
        form = (i // 15) % 4
        if form == 0:
            base *= 1.01
            out.append(fbits(float(v.sum())))
        elif form == 1:
            v1 += 1
            out.append(fbits(float(v2.sum())))
        elif form == 2:
            r += 1
            out.append(fbits(float(base.sum())))
        else:
            base += 0.5
            out.append(fbits(float((t * 2).sum())))
        base /= float(base.max())
    return out, host(xp, base)



# ---------------------------------------------------------------------------------------
# the smallest reproducers of what the programs above found (each a loop of n iterations)


def repro_nan_sign_literal(xp, n):
    """A NaN given to a function (a literal of the stretch, not a parameter) changes sign
    half-way: the held stretch keeps the first NaN's sign."""
    x = xp.ones(2)
    signs = []
    for i in range(n):
        s = math.nan if i < n // 2 else -math.nan
        y = xp.add(x, s)
        signs.append(math.copysign(1.0, float(y[0])))
    return signs


def repro_read_inside_the_body(xp, n):
    """A download inside the loop's body every seventh iteration (a sync point before the
    body's own read)."""
    x = xp.linspace(0, 1, 100)
    out = []
    for i in range(n):
        x = x * 1.01 + 0.001
        if i % 7 == 6:
            host(xp, x)
        out.append(float(x.sum()))
    return out


def repro_split_piece_written(xp, n):
    """A piece of ``split`` (a view of y) written in place, y read."""
    x = xp.ones(4)
    out = []
    for i in range(n):
        y = x * 2
        a, b = xp.split(y, 2)
        b += 1
        out.append(float(y.sum()))
        x = y / 2
    return out


def repro_view_written_base_read(xp, n):
    """A view of an array (made before the loop) written in place, the array read."""
    base = xp.linspace(0, 1, 60)
    v = base[:20]
    out = []
    for i in range(n):
        v += 1
        w = base * 0.5
        out.append(float(w.sum()))
    return out


def repro_two_writes_one_memory(xp, n):
    """An array and a view of it (both made before the loop) each written in place: the
    array's final values differ for good."""
    base = xp.zeros(8)
    v = base[:4]
    out = []
    for i in range(n):
        base += 1
        v *= 0.5
        out.append(float(base.sum()))
    return out, host(xp, base)


def repro_unsendable_int_deferred(xp, n):
    """``x + 10**400`` once: NumPy (and replay off) raise OverflowError at the op; a held
    stretch raises it at the next read."""
    x = xp.ones(4, dtype=xp.float32)
    log = []
    for i in range(n):
        try:
            y = x + (10 ** 400 if i == n // 2 else 3)
        except OverflowError:
            log.append(("at the op", i))
        try:
            float(x.sum())
        except OverflowError:
            log.append(("at the next read", i))
    return log


def repro_unsendable_int_temporary(xp, n):
    """``(x + 10**400)`` downloaded once (OverflowError, caught), then ``float(x.sum())``:
    with a session's defaults, once the stretch is let go, that read has no value."""
    x = xp.ones(4, dtype=xp.float32)
    log = []
    for i in range(n):
        try:
            host(xp, x + (10 ** 400 if i == n // 2 else 3))
        except OverflowError:
            log.append(("overflow", i))
        try:
            log.append(float(x.sum()))
        except Exception as e:  # noqa: BLE001
            log.append((type(e).__name__, i))
    return log


#: name → (function, iterations, compared with NumPy)
PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (view_used_next_iteration, 60, True),
        (strided_slice_updates, 60, True),
        (setitem_uploaded_index, 60, True),
        (out_arguments, 60, True),
        (branch_on_value, 80, True),
        (dtype_change_midway, 80, True),
        (shape_change_midway, 90, True),
        (scalar_changes_type, 80, True),
        (numpy_scalar_params, 80, True),
        (special_scalars, 72, True),
        (stepped_parameter_guess, 60, True),
        (exception_mid_loop, 60, True),
        (results_kept_in_list, 60, True),
        (del_and_reassign, 60, True),
        (scalar_reads, 60, True),
        (where_and_nonzero, 60, True),
        (fancy_gather_scatter, 60, True),
        (fused_functions, 60, True),
        (complex_mandelbrot, 60, True),
        (nested_alternating_loops, 100, True),
        (same_array_twice_in_place, 60, True),
        (overlapping_self_writes, 60, True),
        (broadcast_changing_shape, 100, True),
        (random_reseeded, 60, False),
        (host_random_uploaded, 60, True),
        (set_from_mutated_host, 60, True),
        (setitem_from_mutated_host, 60, True),
        (two_iterations_back, 60, True),
        (reductions_axes, 60, True),
        (astype_cumsum_sort, 60, True),
        (reshape_ravel_views_in_place, 60, True),
        (integer_wraparound, 60, True),
        (boolean_masks, 60, True),
        (concatenate_results, 60, True),
        (no_sync_in_place, 60, True),
        (only_views_of_results_kept, 60, True),
        (aliased_inputs_alternating, 60, True),
        (overlapping_views_as_inputs, 60, True),
        (zero_d_arrays_as_operands, 60, True),
        (matmul_mixed, 60, True),
        (tuple_results, 60, True),
        (copyto_fill_put_clip, 60, True),
        (fortran_and_strided_inputs, 60, True),
        (earlier_arrays_read_and_written, 60, True),
        (in_place_input_read_after, 60, True),
        (power_with_changing_exponent, 60, True),
        (integer_division_by_zero, 60, True),
        (keepdims_broadcast_back, 60, True),
        (name_rebinding_same_handle_order, 60, True),
        (empty_like_and_uninitialised_reads, 60, True),
        (keys_of_a_changing_literal, 150, True),
        (max_min_with_nan, 60, True),
        (nan_sign_in_function_arguments, 60, True),
        (download_every_few_iterations, 60, True),
        (aliases_made_by_functions, 60, True),
        (param_overflows_its_dtype, 60, True),
        (data_dependent_error, 60, True),
        (mask_select_run_ahead, 60, True),
        (stepping_float_parameters, 60, True),
        (input_read_and_dropped_between, 60, True),
        (jacobi_until_converged, 60, True),
        (python_sum_and_comparisons, 60, True),
        (multi_result_functions, 60, True),
        (long_body, 60, True),
        (row_iteration_in_place, 60, True),
        (tolist_and_views_downloaded, 60, True),
        (random_shuffle_and_choice, 60, False),
        (split_pieces_written, 60, True),
        (view_functions_written, 80, True),
        (out_forms, 60, True),
        (shape_attribute_assigned, 60, True),
        (overlapping_inputs_alternating, 60, True),
        (late_input_switches, 60, True),
        (empty_reduction_error, 60, True),
        (repr_and_format_reads, 60, True),
        (precomputed_views_rotating, 60, True),
        (numpy_scalar_signed_zeros, 60, True),
        (huge_integer_parameters, 60, True),
        (no_sync_period_three, 60, True),
        (no_sync_history_in_place, 60, True),
        (no_sync_with_one_read_midway, 150, True),
        (unsendable_int_mid_loop, 60, True),
        (user_kernels_in_loop, 60, True),
        (aliasing_inputs_in_place, 60, True),
        (repro_nan_sign_literal, 50, True),
        (repro_read_inside_the_body, 50, True),
        (repro_split_piece_written, 50, True),
        (repro_view_written_base_read, 50, True),
        (repro_two_writes_one_memory, 50, True),
        (repro_unsendable_int_deferred, 50, True),
        (repro_unsendable_int_temporary, 60, True),
    ]}
