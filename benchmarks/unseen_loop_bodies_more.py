"""The second campaign's loop programs for benchmarks/unseen_loops.py (the first's are in
``unseen_loop_bodies.py``): plain functions ``name(xp, n)``, each a loop of *n* iterations,
written against what the first did not cover — a dtype zoo (float16, complex64, int8/uint16
wraparound, bools, every kind of scalar), 0-d and empty arrays, tiny and large shapes,
non-contiguous and negative-stride inputs that change, reductions over changing axes, index
reads, ``linalg`` and ``fft`` in loops, views and copies carried, Python functions of several
results, nested loops, generators, comprehensions, convergence loops, several reads an
iteration, writes through ``[...] =`` with aliases, errors and warnings mid-body, ``astype``
and ``asarray`` aliases, ``out=`` views, 64-bit edge ints, special floats, cycling scalars,
long loops whose numbers cross the wire's widths, a loop run twice around ``gc.collect()``.
``PROGRAMS`` names each with its iterations and whether NumPy defines its values as CuPy
does."""

from __future__ import annotations

import gc
import math
import warnings
from typing import Callable

import numpy as np

from unseen_loop_bodies import fbits, host

# ---------------------------------------------------------------------------------------
# helpers


def _rng(seed: int = 0):
    return np.random.default_rng(seed)


def _dt(a) -> str:
    return str(a.dtype)


# ---------------------------------------------------------------------------------------
# the dtype zoo


def float16_accumulate(xp, n):
    """float16 arrays with Python float, np.float16 and np.float32 params; float16 sums,
    means (float16 results), a value that overflows float16 to inf now and then."""
    x = xp.linspace(-2, 2, 64).astype(xp.float16)
    out = []
    for i in range(n):
        p = 0.999 if i % 3 else np.float16(0.5)
        x = x * p + np.float16(0.01) * (i % 5)
        y = x * 3000.0 if i % 11 == 10 else x
        s = y.sum()
        m = x.mean()
        big = (x + 60000.0).max()
        out.append((_dt(y), _dt(s), fbits(float(s)), fbits(float(m)), fbits(float(big))))
        z = x * np.float32(1.5)   # (a strong float32 scalar: float32 result)
        out.append((_dt(z), fbits(float(z[3]))))
    return out, host(xp, x)


def complex64_rotation(xp, n):
    """complex64 times Python complex (weak: complex64), np.complex64, np.complex128 (strong:
    complex128), abs, angle, conj, .real/.imag sums."""
    z = (xp.linspace(0, 1, 40, dtype=xp.float32) + 1j * xp.linspace(1, 0, 40, dtype=xp.float32)
         ).astype(xp.complex64)
    rot = complex(math.cos(0.1), math.sin(0.1))
    out = []
    for i in range(n):
        k = i % 3
        p = rot if k == 0 else (np.complex64(rot) if k == 1 else np.complex128(rot))
        w = z * p
        z = (w * 1.0001).astype(xp.complex64)
        a = xp.abs(z)
        ang = xp.angle(z)
        c = xp.conj(z) * z
        out.append((_dt(w), _dt(a), fbits(float(a.sum())), fbits(float(ang[5])),
                    fbits(float(c.real.sum())), fbits(float(c.imag.sum()))))
    return out, host(xp, z)


def int8_uint16_wraparound(xp, n):
    """int8 += 100 and uint16 *= 300 wrapping, int8 // -1 of -128, uint16 - 1 of 0, abs of
    -128, negative of uint16, int8 sums (int64)."""
    a = xp.arange(-64, 64, dtype=xp.int8)
    b = xp.arange(0, 65536, 512, dtype=xp.uint16)
    out = []
    for i in range(n):
        a += 100
        b *= 3
        b += xp.uint16(300)
        c = a // -1
        d = xp.abs(a)
        e = b - 1
        f = -b
        g = a.astype(xp.uint16) + b
        out.append((int(a.sum()), int(b.sum()), int(c.min()), int(d.min()), int(e.max()),
                    int(f[1]), _dt(g), int(g.sum())))
    return out, host(xp, a), host(xp, b)


def bool_arithmetic(xp, n):
    """Bool arrays: b + c (or), b * c (and), b * 2 (int64), b + 1.5 (float64), ~b, b ^ c,
    sum and mean of bools, b - c (TypeError, caught), bool params True/False."""
    x = xp.linspace(0, 1, 50)
    out = []
    errs = 0
    for i in range(n):
        b = x > 0.5
        c = x < (0.3 + 0.01 * (i % 40))
        s = b + c
        p = b * c
        q = b * 2
        r = b + 1.5
        t = ~b ^ c
        u = b & (i % 2 == 0)
        v = b | True if i % 3 == 0 else b | False
        if i % 9 == 4:
            try:
                w = b - c
                int(w.sum())
            except TypeError:
                errs += 1
        out.append((_dt(s), int(s.sum()), int(p.sum()), _dt(q), int(q.sum()), _dt(r),
                    fbits(float(r.sum())), int(t.sum()), int(u.sum()), int(v.sum()),
                    fbits(float(b.mean()))))
        x = (x * 1.37 + 0.11) % 1.0
    return out, errs


def scalar_kind_zoo(xp, n):
    """One float32 array and one int16 array times a scalar cycling through every kind:
    Python int, float, bool, complex; NumPy bool_, int8, uint8, int64, uint64, float16,
    float32, float64, complex64 (NEP 50's weak and strong)."""
    x = xp.linspace(-1, 1, 16, dtype=xp.float32)
    k = xp.arange(-8, 8, dtype=xp.int16)
    kinds = [3, 3.0, True, 3 + 0j, np.bool_(True), np.int8(3), np.uint8(3), np.int64(3),
             np.uint64(3), np.float16(3), np.float32(3), np.float64(3), np.complex64(3)]
    out = []
    for i in range(n):
        s = kinds[i % len(kinds)]
        y = x * s + s
        z = k * s
        out.append((_dt(y), host(xp, y), _dt(z), host(xp, z)))
        x = x * 0.99
        float(x.sum())
    return out


def same_value_different_type(xp, n):
    """A float64 array times 0.1 given as Python float and as np.float32(0.1) in turn: the
    same printed value, other bits (np.float32's is not 0.1); and an int32 array plus 7 as
    int and as np.int64 (int32 against int64 results)."""
    x = xp.linspace(0, 1, 32)
    k = xp.arange(32, dtype=xp.int32)
    out = []
    for i in range(n):
        p = 0.1 if i % 2 == 0 else np.float32(0.1)
        q = 7 if (i // 2) % 2 == 0 else np.int64(7)
        y = x * p
        z = k + q
        x = x + y * 1e-3
        out.append((fbits(float(y.sum())), _dt(z), int(z.sum())))
    return out, host(xp, x)


def mixed_precision_pairs(xp, n):
    """Array-array promotion with the pair changing each iteration: float16+float32,
    int8+uint8 (int16), int64+uint64 (float64), float32+int64 (float64), complex64+float64
    (complex128), bool+int8, uint16+int16 (int32)."""
    arrs = {
        "f16": xp.linspace(0, 1, 12).astype(xp.float16), "f32": xp.linspace(1, 2, 12, dtype=xp.float32),
        "i8": xp.arange(-6, 6, dtype=xp.int8), "u8": xp.arange(240, 252, dtype=xp.uint8),
        "i64": xp.arange(12, dtype=xp.int64) * 1000003, "u64": xp.arange(12, dtype=xp.uint64) * 7,
        "c64": xp.ones(12, dtype=xp.complex64) * (1 + 2j), "f64": xp.linspace(0, 3, 12),
        "b": xp.arange(12) % 3 == 0, "u16": xp.arange(12, dtype=xp.uint16) * 5000,
        "i16": xp.arange(12, dtype=xp.int16) * -1000}
    pairs = [("f16", "f32"), ("i8", "u8"), ("i64", "u64"), ("f32", "i64"), ("c64", "f64"),
             ("b", "i8"), ("u16", "i16")]
    out = []
    for i in range(n):
        a, b = pairs[i % len(pairs)]
        r = arrs[a] + arrs[b]
        m = arrs[a] * arrs[b]
        out.append((a, b, _dt(r), host(xp, r), _dt(m), host(xp, m)))
        float(r.real.sum()) if r.dtype.kind == "c" else float(r.sum())
    return out


# ---------------------------------------------------------------------------------------
# 0-d, empty, tiny and large


def zero_d_only(xp, n):
    """Only 0-d arrays: float64, float32, int64, bool; ``s[()]``, ``s.item()``, ``s[...] =``,
    0-d results of reductions as next operands."""
    s = xp.asarray(1.0)
    f = xp.asarray(np.float32(2.0))
    k = xp.asarray(3)
    holder = xp.zeros((), dtype=xp.float32)
    out = []
    for i in range(n):
        s = s * 0.5 + 1
        f = f * np.float32(0.9) + s.astype(xp.float32)
        k = (k * 7 + 3) % 101
        b = s > f
        holder[...] = f - 0.25
        f = holder + 0
        t = xp.stack([s, f.astype(xp.float64)]).sum()
        out.append((fbits(s.item()), fbits(float(f[()])), int(k), bool(b), _dt(f),
                    fbits(float(t)), int(xp.asarray(k).ndim)))
    return out


def empty_arrays(xp, n):
    """Arrays of shape (0,), (3, 0), (0, 4): sums (0), prods (1), concatenate with empty,
    reshape, max of empty (ValueError, caught), mean of empty (NaN), matmul of empties."""
    e = xp.zeros(0)
    E = xp.ones((3, 0))
    F = xp.ones((0, 4))
    x = xp.linspace(0, 1, 4)
    out = []
    for i in range(n):
        e = e * 2 + i
        s = e.sum()
        p = E.prod(axis=1)
        c = xp.concatenate([x, e, x[:1]])
        r = c[:0].reshape(0, 5)
        m = E @ F
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mean = float(e.mean())
        try:
            mx = float(e.max())
        except ValueError:
            mx = "empty"
        x = c[:4] * 0.9 + float(s)
        out.append((fbits(float(s)), host(xp, p), c.shape, r.shape, host(xp, m), fbits(mean),
                    mx, E.sum(axis=0).shape, int(E.size)))
    return out, host(xp, x)


def tiny_shapes(xp, n):
    """Shapes (1,), (1, 1, 1), (1, 0): broadcasting against each other in turn, squeeze,
    a 1-element array read as a scalar."""
    a = xp.ones(1)
    b = xp.full((1, 1, 1), 2.0)
    out = []
    for i in range(n):
        a = a * 1.01 + b.reshape(1)
        b = b + a * 0.5 if i % 2 else b - a[0] * 0.25
        c = (a + b).squeeze()
        out.append((fbits(float(a[0])), fbits(float(c)), c.shape, (a * b).shape))
    return out, host(xp, b)


def large_array_loop(xp, n):
    """A 2**20-element float32 array in a loop (4 MiB a result), reads of a sum and an
    element."""
    x = xp.linspace(0, 1, 1 << 20, dtype=xp.float32)
    out = []
    for i in range(n):
        x = x * 0.999 + 0.0005
        x[i * 997 % (1 << 20)] = -1
        out.append((fbits(float(x.sum(dtype=xp.float64))), fbits(float(x[12345]))))
    return out, host(xp, x[::4096])


# ---------------------------------------------------------------------------------------
# layouts that change


def noncontig_inputs_rotating(xp, n):
    """The same body given x, x[::-1], x.T-like transposes, x[:, ::2], x[::2, ::-1] in turn:
    one stretch whose input strides change every iteration."""
    X = xp.arange(96.0).reshape(8, 12) / 96
    out = []
    for i in range(n):
        forms = [X, X[::-1], X.T[:8, :8], X[:, ::2], X[::2, ::-1], X[1:, 1:]]
        v = forms[i % len(forms)]
        y = v * 2.0 + 1.0
        X = X * 0.99 + 0.005
        out.append((y.shape, fbits(float(y.sum())), fbits(float(y[0, -1]))))
    return out, host(xp, X)


def negative_stride_carried(xp, n):
    """The carried array is a reversed view every other iteration, and written in place
    through that view."""
    x = xp.linspace(0, 1, 33)
    out = []
    for i in range(n):
        y = x * 0.5 + 0.25
        x = y[::-1] if i % 2 == 0 else y
        x[:3] += 1
        out.append((fbits(float(x[0])), fbits(float(x.sum())), x.strides[0] < 0))
    return out, host(xp, x)


def view_or_copy_carried(xp, n):
    """The carried array is a view in some iterations and a copy in others; the base is
    written in place afterwards (a view sees it, a copy does not)."""
    base = xp.linspace(0, 1, 40)
    x = base[:20]
    out = []
    for i in range(n):
        if i % 3 == 0:
            x = base[i % 7:i % 7 + 20]
        elif i % 3 == 1:
            x = x.copy()
        y = x * 2
        base += 0.01
        out.append((fbits(float(y.sum())), fbits(float(x.sum()))))
    return out, host(xp, base)


def reduction_axis_cycle(xp, n):
    """Reductions over an axis that changes: 0, 1, 2, None, (0, 2), -1, keepdims on and off."""
    X = xp.asarray(_rng(11).standard_normal((3, 4, 5)))
    axes = [0, 1, 2, None, (0, 2), -1]
    out = []
    for i in range(n):
        ax = axes[i % len(axes)]
        kd = (i // len(axes)) % 2 == 1
        s = X.sum(axis=ax, keepdims=kd)
        m = X.max(axis=ax, keepdims=kd)
        st = X.std(axis=ax, keepdims=kd)
        X = X * 0.9 + 0.1 * xp.tanh(X)
        out.append((s.shape, host(xp, xp.asarray(s)), host(xp, xp.asarray(m)),
                    fbits(float(xp.asarray(st).sum()))))
    return out, host(xp, X)


# ---------------------------------------------------------------------------------------
# index reads, scans, joins


def arg_reads_feed_back(xp, n):
    """argmax/argmin/argsort/searchsorted (side left and right in turn, a sorter) read and
    used as the next iteration's indices."""
    x = xp.asarray(_rng(12).random(60))
    out = []
    for i in range(n):
        j = int(x.argmax())
        k = int(x.argmin())
        order = xp.argsort(x)
        side = "left" if i % 2 else "right"
        pos = xp.searchsorted(x, xp.asarray([0.25, 0.5, 0.75]), side=side, sorter=order)
        x[j] = x[k] * 0.5
        x[int(order[30])] += 0.3
        x = (x * 1.7) % 1.0
        out.append((j, k, host(xp, pos), int(order[0])))
    return out, host(xp, x)


def scans_and_joins(xp, n):
    """cumsum, diff(n=2), roll with a changing shift, concatenate, stack on a changing axis,
    where, take with indices wrapped or clipped, put, repeat."""
    x = xp.linspace(0, 1, 24)
    out = []
    for i in range(n):
        c = xp.cumsum(x)
        d = xp.diff(x, n=2)
        r = xp.roll(x, i % 7 - 3)
        j = xp.concatenate([d, r[:2]])
        st = xp.stack([x[:6], r[:6]], axis=i % 2)
        w = xp.where(c > c[-1] / 2, r, -r)
        # (CuPy's take has no ``mode``: the indices wrapped or clipped first, as NumPy's
        # modes would; a GPU run of program_floor.py found the loop raising on CuPy, run 325)
        idx = xp.asarray([0, 5, 30, -40])
        t = xp.take(x, idx % 24 if i % 2 else xp.clip(idx, 0, 23))
        xp.put(x, [i % 24, (i + 5) % 24], [0.5, 0.25])
        rep = xp.repeat(x[:3], 2)
        x = (w + j[:24] if j.size >= 24 else w) * 0.5 + 0.1
        out.append((fbits(float(c[-1])), st.shape, host(xp, t), host(xp, rep),
                    fbits(float(x.sum()))))
    return out


def take_put_negative_indices(xp, n):
    """``x[idx] = v`` and ``take`` with negative and repeated indices, ``put`` with mode=clip,
    an index out of range now and then (IndexError, caught)."""
    x = xp.arange(20.0)
    out = []
    for i in range(n):
        idx = xp.asarray([-1, -2, 3, 3, i % 20])
        x[idx] = x[idx] * 0.5 + 1
        t = xp.take(x, idx)
        if i % 8 == 7:
            try:
                bad = x[25 + i % 3]   # (an index array would wrap in CuPy)
                out.append(float(bad))
            except IndexError:
                out.append("index")
        out.append((fbits(float(t.sum())), fbits(float(x.sum()))))
    return out, host(xp, x)


# ---------------------------------------------------------------------------------------
# linalg and fft


def linalg_in_loop(xp, n):
    """norm (2, 'fro', inf, 1), dot of 1-D (0-d), matmul 2-D @ 1-D and 1-D @ 2-D, solve, inv,
    det in one loop."""
    rng = _rng(13)
    A = xp.asarray(rng.standard_normal((6, 6)) + 6 * np.eye(6))
    v = xp.asarray(rng.standard_normal(6))
    out = []
    for i in range(n):
        w = A @ v
        u = v @ A
        d = xp.dot(v, w)
        s = xp.linalg.solve(A, w)
        Ai = xp.linalg.inv(A)
        det = xp.linalg.det(A)
        nrm = [xp.linalg.norm(v), xp.linalg.norm(A, "fro"), xp.linalg.norm(v, xp.inf),
               xp.linalg.norm(A, 1)]
        v = (s + u * 0.01) / float(nrm[0])
        A = A + xp.outer(v, v) * 0.001
        out.append((fbits(float(d)), fbits(float(det)), host(xp, Ai[0]),
                    [fbits(float(q)) for q in nrm]))
    return out, host(xp, A), host(xp, v)


def fft_in_loop(xp, n):
    """fft/ifft, rfft/irfft with n=, fft2, fftshift, fftfreq in a loop (complex128)."""
    x = xp.linspace(0, 1, 32)
    M = xp.ones((4, 8)) * 0.5
    out = []
    for i in range(n):
        F = xp.fft.fft(x)
        x2 = xp.fft.ifft(F * 0.99).real
        R = xp.fft.rfft(x, n=32 + (i % 3) * 2)
        back = xp.fft.irfft(R, n=32)
        F2 = xp.fft.fft2(M)
        sh = xp.fft.fftshift(xp.abs(F))
        fr = xp.fft.fftfreq(8, d=0.5)
        x = x2 * 0.5 + back * 0.5 + 0.001
        M = M + F2.real * 1e-3
        out.append((fbits(float(xp.abs(R).sum())), fbits(float(sh[0])), host(xp, fr),
                    _dt(F), R.shape))
    return out, host(xp, x)


def fft_float32(xp, n):
    """fft of float32 (complex64 in CuPy and NumPy 2), irfft back, norm='ortho' in turn."""
    x = xp.linspace(0, 1, 64, dtype=xp.float32)
    out = []
    for i in range(n):
        norm = "ortho" if i % 2 else None
        F = xp.fft.rfft(x, norm=norm)
        x = xp.fft.irfft(F * 0.9, n=64, norm=norm).astype(xp.float32) + 0.01
        out.append((_dt(F), fbits(float(x.sum()))))
    return out, host(xp, x)


# ---------------------------------------------------------------------------------------
# Python structure around the ops


def _split_results(xp, x, k):
    if k == 0:
        return x * 2
    if k == 1:
        return x + 1, x - 1
    return x * 0.5, x + 0.5, xp.sqrt(xp.abs(x))


def variable_result_counts(xp, n):
    """A helper that returns one, two or three arrays as the iteration says."""
    x = xp.linspace(0.1, 1, 30)
    out = []
    for i in range(n):
        r = _split_results(xp, x, i % 3)
        if isinstance(r, tuple):
            x = sum(r) / len(r)
        else:
            x = r * 0.5
        out.append((len(r) if isinstance(r, tuple) else 1, fbits(float(x.sum()))))
    return out, host(xp, x)


def nested_loops_sharing(xp, n):
    """An inner loop of a changing count writes an array the outer loop reads and writes."""
    acc = xp.zeros(16)
    x = xp.linspace(0, 1, 16)
    out = []
    for i in range(n):
        for j in range(i % 4 + 1):
            acc += x * (j + 1)
            x = x * 0.99
        acc *= 0.5
        x[j] = float(acc[j]) * 0.01
        out.append(fbits(float(acc.sum())))
    return out, host(xp, acc), host(xp, x)


def _generate(xp, x, n):
    for i in range(n):
        x = x * 0.9 + 0.1
        yield x
        x[i % x.size] += 1   # (after the consumer used it)


def generator_loop(xp, n):
    """A generator yields arrays (written in place after each yield); the consumer reads."""
    out = []
    kept = []
    for i, y in enumerate(_generate(xp, xp.linspace(0, 1, 20), n)):
        out.append(fbits(float(y.sum())))
        if i % 10 == 0:
            kept.append(y)
    return out, [host(xp, k) for k in kept]


def comprehension_loop(xp, n):
    """List comprehensions of arrays (their length changing), stacked and summed with
    Python's ``sum``."""
    x = xp.linspace(0, 1, 10)
    out = []
    for i in range(n):
        parts = [x * k + i for k in range(i % 3 + 2)]
        s = xp.stack(parts)
        t = sum(p[:3] for p in parts)
        x = s.mean(axis=0) * 0.1 + t.sum() * 1e-3
        out.append((s.shape, fbits(float(x.sum()))))
    return out


def while_converge_counts(xp, n):
    """A while loop converging on a value read each time (cos fixed point), from a start that
    changes, so its count changes."""
    out = []
    for i in range(n):
        x = xp.full(8, 0.1 * (i % 10))
        count = 0
        while True:
            nx = xp.cos(x)
            d = float(xp.abs(nx - x).max())
            x = nx
            count += 1
            if d < 1e-6 or count > 200:
                break
        out.append((count, fbits(float(x[0]))))
    return out


def several_reads_per_iteration(xp, n):
    """``if x.sum() > t`` then ``elif x.max() < u`` then ``int(argmax)``: two to four reads an
    iteration, the op sequence following the branches."""
    x = xp.linspace(0, 1, 40)
    out = []
    for i in range(n):
        if x.sum() > 20:
            x = x * 0.8
            br = 0
        elif x.max() < 0.9:
            x = x + 0.2
            br = 1
        else:
            x = x ** 2
            br = 2
        j = int(x.argmax())
        x[j] *= 0.95
        if bool((x > 0.5).any()):
            x[0] = 0.3
        out.append((br, j, fbits(float(x.mean()))))
    return out, host(xp, x)


def ellipsis_write_alias(xp, n):
    """``x[...] = f(x)`` where y is x itself and v a view of it (made before the loop):
    both read after."""
    x = xp.linspace(0, 1, 30)
    y = x
    v = x[5:15]
    out = []
    for i in range(n):
        x[...] = xp.sin(x) + 0.1 * i
        a = float(y.sum())
        b = float(v[0])
        v[...] = v * 0.5
        out.append((fbits(a), fbits(b), fbits(float(x[7]))))
    return out, host(xp, y)


# ---------------------------------------------------------------------------------------
# errors and warnings mid-body


def errors_mid_body(xp, n):
    """Shape mismatch, an index out of range, a bad axis, a bad reshape, a setitem of the
    wrong shape, each caught, the loop going on with the same body."""
    x = xp.linspace(0, 1, 12)
    out = []
    for i in range(n):
        y = x * 1.1
        k = i % 6
        try:
            if k == 1:
                z = y + xp.ones(5)
            elif k == 2:
                z = y[20]   # (an index array would wrap in CuPy)
            elif k == 3:
                z = y.sum(axis=3)
            elif k == 4:
                z = y.reshape(5, 5)
            elif k == 5:
                y[:4] = xp.ones(3)
                z = y
            else:
                z = y * 2
            out.append(fbits(float(z.sum())))
        except (ValueError, IndexError, TypeError) as e:
            out.append(type(e).__name__ if not isinstance(e, np.exceptions.AxisError) else "AxisError")
        x = y / float(y.max())
    return out, host(xp, x)


def failing_op_in_held_body(xp, n):
    """An in-place ``+=`` of a float into an int array (a casting error) at every 7th
    iteration, inside a body otherwise the same every time."""
    k = xp.arange(10, dtype=xp.int64)
    x = xp.linspace(0, 1, 10)
    out = []
    for i in range(n):
        x = x * 0.5 + 0.25
        try:
            k += 1.5 if i % 7 == 6 else 1
            out.append(int(k.sum()))
        except TypeError:   # (NumPy's UFuncTypeError, the pool's TypeError)
            out.append("TypeError")
        out.append(fbits(float(x.sum())))
    return out, host(xp, k)


def warnings_recorded(xp, n):
    """Divide by zero and invalid warnings recorded (``catch_warnings(record=True)``) in a
    loop whose zero comes and goes: each iteration's count, category and line."""
    x = xp.linspace(-1, 1, 9)
    out = []
    for i in range(n):
        with warnings.catch_warnings(record=True) as got, np.errstate(divide="warn", invalid="warn"):
            warnings.simplefilter("always")
            d = x - (x[4] if i % 4 == 0 else 0.3)
            y = 1.0 / d
            z = xp.log(d)
            s = float(xp.nansum(xp.where(xp.isfinite(y), y, 0)) + xp.nansum(z))
        out.append((fbits(s), sorted((w.category.__name__, str(w.message)) for w in got)))
        x = x * 1.0
    return out


def warnings_as_errors(xp, n):
    """Warnings turned into errors (``simplefilter('error')``) in some iterations: a divide by
    zero then raises RuntimeWarning (caught), the loop going on."""
    x = xp.linspace(-1, 1, 9)
    out = []
    for i in range(n):
        with warnings.catch_warnings(), np.errstate(divide="warn", invalid="warn"):
            warnings.simplefilter("error" if i % 5 == 2 else "ignore")
            try:
                y = 1.0 / (x - x[4])
                out.append(fbits(float(xp.where(xp.isfinite(y), y, 0).sum())))
            except RuntimeWarning as e:
                out.append(("warned", str(e)))
        x = x * 1.0 + 0.0
        out.append(fbits(float(x.sum())))
    return out


def warning_line_numbers(xp, n):
    """The line a divide by zero warning names, recorded every iteration of a held loop."""
    x = xp.linspace(-1, 1, 9)
    out = []
    for i in range(n):
        with warnings.catch_warnings(record=True) as got, np.errstate(divide="warn"):
            warnings.simplefilter("always")
            a = x * 2.0
            b = 1.0 / (a - a[4])
            c = b + 1.0
            float(c[0])
        out.append([(w.category.__name__, w.lineno - warning_line_numbers.__code__.co_firstlineno)
                    for w in got])
        x = x + 0.0
    return out


# ---------------------------------------------------------------------------------------
# aliases: astype, asarray, out=


def astype_copy_false_alias(xp, n):
    """``astype(dtype, copy=False)`` that aliases (same dtype) or copies (another), written in
    place, the original read; the dtype alternates."""
    x = xp.linspace(0, 1, 16, dtype=xp.float32)
    out = []
    for i in range(n):
        dt = xp.float32 if i % 2 == 0 else xp.float64
        y = x.astype(dt, copy=False)
        y += 1
        x = x * 0.5
        out.append((_dt(y), fbits(float(x.sum())), fbits(float(y.sum()))))
    return out, host(xp, x)


def copy_vs_asarray(xp, n):
    """``asarray`` (an alias), ``array(copy=False)``... ``copy()``, ``array`` (a copy) in
    turn, written, the original read."""
    x = xp.linspace(0, 1, 16)
    out = []
    for i in range(n):
        k = i % 3
        y = xp.asarray(x) if k == 0 else (x.copy() if k == 1 else xp.array(x))
        y[::2] = -1
        out.append((k, fbits(float(x.sum()))))
        x = xp.abs(x) * 0.9 + 0.05
    return out


def out_into_views(xp, n):
    """``out=`` into views that change each iteration (b[::2], b[1::2], a[:8], b[::-2])."""
    a = xp.linspace(0, 1, 16)
    b = xp.zeros(16)
    out = []
    for i in range(n):
        views = [b[::2], b[1::2], a[:8], b[::-2], a[8:]]
        o = views[i % len(views)]
        xp.multiply(a[i % 2::2], 0.5, out=o)
        xp.add(b[1::2], 1.0, out=a[:8])
        a /= float(a.max()) + 1
        out.append((fbits(float(a.sum())), fbits(float(b.sum()))))
    return out, host(xp, a), host(xp, b)


# ---------------------------------------------------------------------------------------
# special numbers


def int64_edge_scalars(xp, n):
    """int64 arrays with 2**63-1, -2**63, uint64 with 2**64-1 as scalars (wrapping sums),
    comparisons against them; an int64 array plus 2**64-1 (OverflowError, caught)."""
    a = xp.arange(-3, 3, dtype=xp.int64)
    u = xp.arange(6, dtype=xp.uint64)
    edges = [2 ** 63 - 1, -2 ** 63, 0, 1, -1]
    out = []
    for i in range(n):
        e = edges[i % len(edges)]
        y = a + e
        c = a < e
        v = u + (2 ** 64 - 1 if i % 2 else 1)
        w = u == 2 ** 64 - 1
        out.append((host(xp, y), host(xp, c), host(xp, v), int(w.sum())))
        try:
            z = a + (2 ** 64 - 1 if i % 6 == 5 else 2)
            out.append(int(z.sum()))
        except OverflowError:
            out.append("overflow")
        a = (a * 3 + 1) % 1000 - 500
    return out


def nan_inf_zero_scalars(xp, n):
    """NaN (both signs), inf, -inf, -0.0, 0.0 cycling in operators and functions: +, *,
    maximum, fmax, where, nan_to_num, copysign, arctan2, clip."""
    x = xp.asarray(np.array([-2.0, -0.0, 0.0, 1.5, math.inf, -math.inf, math.nan]))
    specials = [math.nan, -math.nan, math.inf, -math.inf, -0.0, 0.0]
    out = []
    for i in range(n):
        s = specials[i % len(specials)]
        rows = [x + s, x * s, xp.maximum(x, s), xp.fmax(x, s), xp.where(x > 0, s, x),
                xp.nan_to_num(x * s, nan=s if s == s else 1.0), xp.copysign(x, s),
                xp.arctan2(x, s), xp.minimum(xp.maximum(x, -1.0), s)]
        out.append([host(xp, r) for r in rows])
        out.append(fbits(float(xp.nansum(rows[0]))))
    return out


def cycling_scalar_params(xp, n):
    """Scalars that cycle through a few values (period 2, 3, 5) rather than stepping: a
    float, an int, a float that repeats one value twice then jumps."""
    x = xp.linspace(0, 1, 20)
    k = xp.arange(20, dtype=xp.int64)
    fl = [0.5, 1.5]
    il = [1, 2, 3]
    ol = [0.25, 0.25, 0.75, -1.0, 2.0]
    out = []
    for i in range(n):
        x = x * fl[i % 2] + ol[i % 5]
        k = (k + il[i % 3]) % 97
        x = x / float(xp.abs(x).max())
        out.append((fbits(float(x.sum())), int(k.sum())))
    return out, host(xp, x)


def ping_pong_inputs(xp, n):
    """The input handle alternates among three arrays (period 3) and the kept results go to
    one of them: handles that do not step by a fixed amount."""
    bufs = [xp.linspace(0, 1, 16) + k for k in range(3)]
    out = []
    for i in range(n):
        a = bufs[i % 3]
        y = a * 0.5 + 0.25
        bufs[(i + 1) % 3] = y
        out.append(fbits(float(y.sum())))
    return out, [host(xp, b) for b in bufs]


def frees_pattern_changes(xp, n):
    """A loop that keeps every 10th result (so the frees in its messages change their
    pattern), with one read per iteration."""
    x = xp.linspace(0, 1, 16)
    kept = []
    out = []
    for i in range(n):
        y = x * 1.01 + 0.01
        if i % 10 == 0:
            kept.append(y)
        x = y
        out.append(fbits(float(y.sum())))
    return out, [host(xp, k) for k in kept]


def hot_sync_long(xp, n):
    """A cheap hot loop (one op, one read) of many iterations: batch numbers and handles
    cross 127/128, 255/256 and beyond, the steady lane's widths."""
    x = xp.linspace(0, 1, 8)
    out = []
    for i in range(n):
        out.append(fbits(float((x + 1).sum())))
    return out


def carried_long(xp, n):
    """A loop-carried array over many iterations (handles step by fixed amounts while the
    lane serves; numbers cross their wire widths)."""
    x = xp.linspace(0, 1, 8)
    out = []
    for i in range(n):
        x = x * 0.999 + 0.001
        out.append(fbits(float(x.sum())))
    return out, host(xp, x)


def carried_long_with_gaps(xp, n):
    """The carried loop with another message every 300 iterations (a download), so the
    lane is left and armed again, at numbers of every width."""
    x = xp.linspace(0, 1, 8)
    out = []
    for i in range(n):
        x = x * 0.999 + 0.001
        out.append(fbits(float(x.sum())))
        if i % 300 == 150:
            out.append(host(xp, x))
    return out, host(xp, x)


def run_twice_with_gc(xp, n):
    """The same loop run twice, its arrays dropped and ``gc.collect()`` between, then a third
    time on new inputs of another shape."""
    out = []
    for rnd, size in enumerate((32, 32, 48)):
        x = xp.linspace(0, 1, size)
        y = xp.ones(size)
        for i in range(n):
            x = x * 0.9 + y * 0.1
            y = xp.sin(x) + rnd
            out.append(fbits(float(x.sum())))
        del x, y
        gc.collect()
    return out


def input_written_by_other_stretch(xp, n):
    """The loop's input written by another stretch (its own sync) every fourth iteration,
    through a view made before the loop and through ``out=``: the run ahead must not
    answer."""
    x = xp.linspace(0, 1, 20)
    v = x[::5]
    out = []
    for i in range(n):
        y = x * 2 + 1
        out.append(fbits(float(y.sum())))
        if i % 4 == 1:
            v += 1
            float(v[0])
        if i % 4 == 3:
            xp.multiply(x, 0.5, out=x)
            float(x[0])
    return out, host(xp, x)


def body_tail_changes(xp, n):
    """A body whose last op before the read changes every seventh iteration (another op,
    another literal): the early replay must be undone."""
    x = xp.linspace(0, 1, 20)
    out = []
    for i in range(n):
        x = x * 0.9 + 0.05
        y = x + 1
        if i % 7 == 6:
            z = y.sum(axis=0, keepdims=True)
        elif i % 7 == 3:
            z = y.prod()
        else:
            z = y.sum()
        out.append(fbits(float(z.ravel()[0]) if z.ndim else float(z)))
    return out, host(xp, x)


def same_read_twice(xp, n):
    """A 0-d result read twice (float then int then item), a second read of nothing new (a
    sync with no ops), and ``bool`` of a comparison."""
    x = xp.linspace(0, 1, 10)
    out = []
    for i in range(n):
        x = x * 1.01
        s = x.sum()
        a = float(s)
        b = float(s)
        c = int(s)
        d = s.item()
        e = bool(s > 5)
        out.append((fbits(a), fbits(b), c, fbits(d), e))
    return out


def uint8_negative_comparisons(xp, n):
    """uint8 arrays compared with negative Python ints and ints past 255 (NumPy 2 allows it:
    all True / all False), then added to them (OverflowError, caught)."""
    u = xp.arange(0, 250, 10, dtype=xp.uint8)
    out = []
    for i in range(n):
        t = [-1, 300, 128, -129, 255][i % 5]
        c = u > t
        e = u == t
        out.append((int(c.sum()), int(e.sum())))
        try:
            out.append(int((u + t).sum()))
        except OverflowError:
            out.append("overflow")
        u = u + 1
    return out


def integer_negative_power(xp, n):
    """``k ** e`` with an int array and an exponent that is negative now and then (ValueError,
    caught), and float powers with a negative base (NaN)."""
    k = xp.arange(1, 9, dtype=xp.int64)
    x = xp.linspace(-1, 1, 8)
    out = []
    for i in range(n):
        e = -1 if i % 6 == 5 else (i % 3)
        try:
            out.append(int((k ** e).sum()))
        except ValueError:
            out.append("negative power")
        with np.errstate(invalid="ignore"):
            out.append(host(xp, x ** 0.5))
        x = x * 0.99
    return out


def einsum_and_products(xp, n):
    """einsum with a subscript string that changes, inner, vdot, outer, kron, tensordot."""
    A = xp.arange(12.0).reshape(3, 4) / 12
    v = xp.linspace(0, 1, 4)
    subs = ["ij,j->i", "ij,ij->", "ij->ji", "ij,j->ij"]
    out = []
    for i in range(n):
        s = subs[i % len(subs)]
        r = xp.einsum(s, A, v) if s != "ij,ij->" and s != "ij->ji" else (
            xp.einsum(s, A, A) if s == "ij,ij->" else xp.einsum(s, A))
        ip = xp.inner(v, v)
        vd = xp.vdot(A, A)
        ou = xp.outer(v, v[:2])
        kr = xp.kron(v[:2], v[:3])
        td = xp.tensordot(A, v, axes=1)
        A = A * 0.99 + td[:, None] * 1e-3
        out.append((r.shape, host(xp, xp.asarray(r)), fbits(float(ip)), fbits(float(vd)),
                    fbits(float(ou.sum())), fbits(float(kr.sum()))))
    return out


def reductions_with_out_and_dtype(xp, n):
    """sum/prod/cumsum with ``dtype=`` and ``out=`` (a 0-d out, a view out), mean of ints."""
    k = xp.arange(1, 13, dtype=xp.int8)
    o0 = xp.zeros((), dtype=xp.float64)
    o1 = xp.zeros(24, dtype=xp.int64)
    out = []
    for i in range(n):
        xp.sum(k, dtype=xp.float64, out=o0)
        xp.cumsum(k, dtype=xp.int64, out=o1[::2])
        p = xp.prod(k[:5], dtype=xp.int8)
        m = k.mean()
        k = (k * 3 + 1) % 50
        k = k.astype(xp.int8)
        out.append((fbits(float(o0)), host(xp, o1), int(p), _dt(p), fbits(float(m))))
    return out


def fill_and_full_changing(xp, n):
    """``fill`` and ``full`` with values whose type and sign change (ints, floats, -0.0, NaN,
    bools) into float32 and int16 arrays."""
    f = xp.empty(6, dtype=xp.float32)
    k = xp.empty(6, dtype=xp.int16)
    vals = [1, -0.0, 2.5, math.nan, True, -7, 1e10]
    out = []
    for i in range(n):
        v = vals[i % len(vals)]
        f.fill(v)
        g = xp.full(3, v, dtype=xp.float32)
        try:
            k.fill(v if not (isinstance(v, float) and (v != v or abs(v) > 1e5)) else 0)
        except (ValueError, OverflowError):
            pass
        out.append((host(xp, f), host(xp, g), host(xp, k)))
    return out


def sort_variants(xp, n):
    """sort along changing axes, argsort of ties (stable), partition/argpartition's kth
    element, lexsort, unique with counts."""
    X = xp.asarray((_rng(14).random((4, 6)) * 5).round())
    out = []
    for i in range(n):
        ax = i % 2
        s = xp.sort(X, axis=ax)
        a = xp.argsort(X.ravel(), kind="stable")
        p = xp.partition(X.ravel(), 5)[5]
        ap = xp.argpartition(X.ravel(), 3)[3]
        lx = xp.lexsort(X[:2])
        u, c = xp.unique(X, return_counts=True)
        X = (X * 3 + 1) % 7
        out.append((host(xp, s), host(xp, a), fbits(float(p)), fbits(float(X.ravel()[int(ap)])),
                    host(xp, lx), host(xp, u), host(xp, c)))
    return out


def complex_scalars_into_real(xp, n):
    """float32 arrays times 1j (complex64), np.complex64(1j), np.complex128(1j) (complex128);
    ``.real`` written in place through a kept complex array."""
    x = xp.linspace(0, 1, 8, dtype=xp.float32)
    z = xp.zeros(8, dtype=xp.complex64)
    out = []
    for i in range(n):
        c = [1j, np.complex64(1j), np.complex128(1j), 2.0, 1 + 0j][i % 5]
        y = x * c
        z += y.astype(xp.complex64)
        z.real[::2] = x[::2]
        out.append((_dt(y), fbits(float(xp.abs(z).sum()))))
        x = x * 0.95
    return out, host(xp, z)


def bool_setitem_and_mask_ops(xp, n):
    """Bool arrays written through masks and ``[...]``, ``x[mask] = True``, ``any``/``all``
    along axes read, ``logical_*`` with Python bools."""
    B = xp.zeros((5, 6), dtype=bool)
    out = []
    for i in range(n):
        B[i % 5, (i * 2) % 6] = True
        B[..., i % 6] ^= True
        m = xp.logical_and(B, i % 2 == 0)
        o = xp.logical_or(B, False)
        B[B.sum(axis=1) > 3] = False
        out.append((host(xp, B.any(axis=0)), host(xp, B.all(axis=1)), int(m.sum()),
                    int(o.sum()), bool(B.any())))
    return out


def bool_vs_int_params(xp, n):
    """A bool array plus True, 1, np.True_ and np.int8(1) in runs of six iterations: True
    is an int to Python, a bool to NumPy (``b + True`` is bool, ``b + 1`` int64)."""
    b = xp.arange(12) % 3 == 0
    x = xp.arange(12, dtype=xp.int16)
    ps = [True, 1, np.True_, np.int8(1), False, 0]
    out = []
    for i in range(n):
        p = ps[(i // 6) % len(ps)]
        y = b + p
        z = b * p
        w = x + p
        out.append((_dt(y), host(xp, y), _dt(z), int(z.sum()), _dt(w), int(w.sum())))
        b = ~b if i % 4 == 0 else b
    return out


def host_index_arrays_mutated(xp, n):
    """One NumPy index array of this process mutated in place every iteration and given to
    ``take`` and ``x[idx]``; a Python list of changing values as an index."""
    x = xp.arange(10.0)
    idx = np.array([0, 1, 2])
    out = []
    for i in range(n):
        idx[:] = [i % 10, (i + 3) % 10, (i * 7) % 10]
        t = xp.take(x, idx)
        r = x[idx] * 2
        u = x[[i % 10, 1]]
        x[idx[:1]] += 0.5
        out.append((fbits(float(t.sum())), fbits(float(r.sum())), fbits(float(u.sum()))))
    return out, host(xp, x)


def long_body_many_handles(xp, n):
    """A body of 60 cheap ops held as one stretch over many iterations: op numbers and
    handles cross 65535/65536 (the wire's uint16 to uint32) inside the loop."""
    x = xp.ones(4, dtype=xp.float32)
    out = []
    for i in range(n):
        for k in range(30):
            x = x * 1.0001
            x = x + 1e-4
        out.append(fbits(float(x[0])))
    return out, host(xp, x)


def ahead_dtype_zoo(xp, n):
    """One read an iteration (so the next replay runs ahead) of float16, complex64, int8 and
    bool arrays carried."""
    h = xp.linspace(0, 1, 16).astype(xp.float16)
    c = (xp.ones(16) * (1 + 1j)).astype(xp.complex64)
    k = xp.arange(16, dtype=xp.int8)
    b = xp.arange(16) % 2 == 0
    out = []
    for i in range(n):
        h = h * np.float16(0.99) + 0.01
        c = c * (0.99 + 0.01j)
        k = k * 3 + 1
        b = b ^ (k > 0)
        out.append(fbits(float(h.sum() + c.real.sum() + k.sum() + b.sum())))
    return out, host(xp, h), host(xp, c), host(xp, k), host(xp, b)


def ahead_in_place_strided(xp, n):
    """In-place writes through strided and reversed views of the input with one read an
    iteration (run ahead), then views made before the loop read after it."""
    x = xp.linspace(0, 1, 32)
    ev = x[::2]
    rv = x[::-1]
    out = []
    for i in range(n):
        x[::2] += 1
        x[1::2] *= 0.5
        x[::-3] -= 0.25
        out.append(fbits(float(x[7])))
    a, b = host(xp, ev), host(xp, rv)
    x *= 2
    return out, a, b, host(xp, ev)


def ahead_last_iteration_changes(xp, n):
    """A loop run ahead whose parameter changes at its last iteration and whose input is
    another array at the one before; the arrays read after."""
    x = xp.linspace(0, 1, 16)
    other = xp.linspace(5, 6, 16)
    out = []
    for i in range(n):
        p = 0.5 if i < n - 1 else 0.75
        src = other if i == n - 2 else x
        y = src * p + 1
        x = y / 2
        out.append(fbits(float(y.sum())))
    return out, host(xp, x), host(xp, other)


def ahead_downloads(xp, n):
    """The only sync an iteration is a download (of a reversed view, of a transpose, of a
    ``tolist``) in turn by periods: run ahead with downloads as its reads."""
    X = xp.arange(12.0).reshape(3, 4)
    out = []
    for i in range(n):
        X = X * 0.99 + 0.01
        k = (i // 10) % 3
        if k == 0:
            out.append(host(xp, X[:, ::-1]))
        elif k == 1:
            out.append(host(xp, X.T))
        else:
            out.append(X[1].tolist())
    return out


def ahead_empty_and_zero_d(xp, n):
    """A loop over an empty array and a 0-d one with one read an iteration."""
    e = xp.zeros((3, 0))
    z = xp.asarray(1.0)
    out = []
    for i in range(n):
        e = e * 2 + 1
        z = z * 0.5 + e.sum() + 1
        out.append(fbits(float(z)))
    return out, e.shape


def ahead_nan_signs(xp, n):
    """Reads that are NaNs (sqrt of negatives, the sign the platform's) from an array
    negated every iteration."""
    x = xp.asarray(np.array([1.0, -1.0, 0.0, -0.0]))
    out = []
    for i in range(n):
        x = -x
        y = xp.sqrt(x)   # (NaN where x < 0: its sign is the platform's)
        out.append((fbits(float(y[0])), fbits(float(y[1]))))
    return out


def edge_float_params(xp, n):
    """Float parameters at the edges held in runs: subnormals, the largest float, the
    smallest normal, -0.0, 2**-1074, and their float32 overflows."""
    x = xp.linspace(-1, 1, 8)
    f = xp.linspace(-1, 1, 8, dtype=xp.float32)
    ps = [5e-324, 1.7976931348623157e308, 2.2250738585072014e-308, -0.0, 1e-45, 3.5e38]
    out = []
    for i in range(n):
        p = ps[(i // 4) % len(ps)]
        a = x * p + p
        b = f * p
        c = f + p
        out.append((host(xp, a), host(xp, b), host(xp, c)))
    return out


def _ptr(xp, a):
    return a.__array_interface__["data"][0] if xp is np else a.data.ptr


def metadata_of_views(xp, n):
    """Strides, contiguity flags, ``base is``, ``shares_memory`` and address offsets of
    views, transposes, reshapes and contiguous copies of a replayed result."""
    X = xp.arange(24.0).reshape(4, 6)
    out = []
    for i in range(n):
        Y = X * 0.5 + 1
        T = Y.T
        V = Y[:, ::-2]
        R = Y.reshape(-1)
        C = xp.ascontiguousarray(T)
        F = xp.asfortranarray(Y)
        out.append((T.strides, V.strides, R.strides, C.strides, F.strides,
                    T.flags.c_contiguous, T.flags.f_contiguous, V.flags.c_contiguous,
                    F.flags.f_contiguous, V.base is Y, T.base is Y, R.base is Y, C.base is None,
                    F.base is None, bool(xp.shares_memory(V, Y)), bool(xp.may_share_memory(C, Y)),
                    _ptr(xp, V) - _ptr(xp, Y), _ptr(xp, R) - _ptr(xp, Y), V.nbytes,
                    fbits(float(V.sum()))))
        X = Y / float(Y.max())
    return out


def param_overflow_warnings(xp, n):
    """Python floats that overflow float16/float32 (``overflow encountered in cast``)
    recorded as warnings in a held loop."""
    h = xp.ones(4, dtype=xp.float16)
    f = xp.ones(4, dtype=xp.float32)
    log = []
    for i in range(n):
        with warnings.catch_warnings(record=True) as got, np.errstate(all="warn"):
            warnings.simplefilter("always")
            p = 70000.0 if i % 3 == 2 else 2.0
            q = 1e39 if i % 4 == 3 else 3.0
            a = h * p
            b = f + q
            v = float(a[0] + b[0])
        log.append((fbits(v), sorted(str(w.message) for w in got)))
    return log


def lane_keeps_every_result(xp, n):
    """One read an iteration (the steady lane serves it) and every result kept, some written
    in place later: the arrays its kept results take turns in must not be ones still held."""
    x = xp.linspace(0, 1, 16)
    kept = []
    out = []
    for i in range(n):
        x = x * 0.99 + 0.01
        kept.append(x)
        out.append(fbits(float(x[3])))
    kept[5] += 100
    return out, [host(xp, k) for k in kept]


def lane_drops_irregularly(xp, n):
    """One read an iteration, results kept in a window whose oldest is dropped on an
    irregular pattern (the frees in the messages do not step)."""
    x = xp.linspace(0, 1, 16)
    window = []
    out = []
    for i in range(n):
        x = x * 0.98 + 0.02
        window.append(x)
        if (i * i) % 7 in (1, 2) and len(window) > 2:
            del window[0]
        out.append(fbits(float(x[1])))
    return out, [host(xp, w) for w in window]


def lane_input_from_before_written(xp, n):
    """A loop run ahead that reads an array made before it (an input of every replay) which
    is written in place by another stretch at irregular iterations."""
    w = xp.linspace(0, 1, 16)
    x = xp.zeros(16)
    out = []
    for i in range(n):
        x = x * 0.5 + w
        out.append(fbits(float(x[2])))
        if i in (7, 8, 20, 33, 34, 35):
            w += 1
    return out, host(xp, x), host(xp, w)


def lane_float_steps_exact(xp, n):
    """One read an iteration and a float parameter that steps exactly (0.5 * i): the steady
    lane writes the next messages' floats as it guesses them."""
    x = xp.linspace(0, 1, 8)
    out = []
    for i in range(n):
        y = x * (0.5 * i) + 1.0
        out.append(fbits(float(y.sum())))
    return out


def lane_float_steps_inexact(xp, n):
    """A float parameter 0.1 * i (last + (last - before) is off by an ulp now and then) and
    i / 3, one read an iteration."""
    x = xp.linspace(0, 1, 8)
    out = []
    for i in range(n):
        y = (x + 0.1 * i) * (i / 3)
        out.append(fbits(float(y.sum())))
    return out


def lane_float_steps_through_zero(xp, n):
    """A float parameter -0.5 * (k - i): -1.0, -0.5, then -0.0 where the guess is 0.0, then
    positive; its zero's sign read through a reciprocal."""
    x = xp.ones(4)
    k = n // 2
    out = []
    for i in range(n):
        p = -0.5 * (k - i)
        y = 1.0 / (x * 0.0 + p)
        out.append(fbits(float(y[0])))
    return out


def lane_two_floats_step(xp, n):
    """Two float parameters stepping at different rates, a constant one, and a loop-carried
    array: the lane's integers and floats together."""
    x = xp.linspace(0, 1, 8)
    out = []
    for i in range(n):
        x = x * 0.5 + (0.25 * i) - (2.0 * i) * 1e-3 + 0.125
        out.append(fbits(float(x[1])))
    return out, host(xp, x)


def lane_float_step_overflows_float16(xp, n):
    """A float16 array times a parameter stepping by 1000 past float16's largest value
    (inf from there, with a cast warning each iteration), one read an iteration."""
    h = xp.ones(4, dtype=xp.float16)
    K = n - 8
    log = []
    for i in range(n):
        p = 65000.0 - 1000.0 * (K - i)
        with warnings.catch_warnings(record=True) as got, np.errstate(all="warn"):
            warnings.simplefilter("always")
            y = h * p
            v = float(y[0])
        log.append((fbits(v), len(got)))
    return log


def no_sync_dtype_zoo(xp, n):
    """No sync point (the loop cut into pieces that repeat): float16 and int8 carried in
    place, a complex64 result kept each iteration, a parameter cycling with period 3."""
    h = xp.linspace(0, 1, 16).astype(xp.float16)
    k = xp.arange(16, dtype=xp.int8)
    kept = []
    for i in range(2 * n):
        h *= np.float16(0.99)
        h += (0.01, 0.02, 0.03)[i % 3]
        k += 7
        kept.append((h.astype(xp.complex64) * (1 + 1j)))
    return host(xp, xp.stack(kept)), host(xp, h), host(xp, k)


def no_sync_warning_counts(xp, n):
    """No sync point, every iteration dividing by zero (a warning each), read at the end:
    the count of warnings and the values."""
    x = xp.linspace(-1, 1, 5)
    kept = []
    with warnings.catch_warnings(record=True) as got, np.errstate(divide="warn"):
        warnings.simplefilter("always")
        for i in range(n):
            x = x * 1.0 + 0.0
            kept.append(1.0 / (x - x[2]))
        v = host(xp, xp.stack(kept))
    return len(got), v


def no_sync_views_rotating(xp, n):
    """No sync point: writes through a view that rotates with period 4 (x[::2], x[1::2],
    x[::-1], x[2:6]) and the whole array kept each iteration."""
    x = xp.linspace(0, 1, 8)
    kept = []
    for i in range(2 * n):
        v = (x[::2], x[1::2], x[::-1], x[2:6])[i % 4]
        v *= 0.9
        v += 0.05
        kept.append(x * 1)
    return host(xp, xp.stack(kept)), host(xp, x)


def repro_warning_line_in_replay(xp, n):
    """A warning of a held stretch (NumPy device) names another op's line: the line of the
    eager matmul before it, not the divide's."""
    x = xp.linspace(-1, 1, 4)
    W = xp.eye(4)
    first = repro_warning_line_in_replay.__code__.co_firstlineno
    lines = []
    for i in range(n):
        with warnings.catch_warnings(record=True) as got, np.errstate(divide="warn"):
            warnings.simplefilter("always")
            m = x @ W
            b = 1.0 / (m - m[1])
            float(b[0])
        lines.append([w.lineno - first for w in got])
    return lines


def repro_lane_warning_leaks(xp, n):
    """A loop served by the steady lane whose next iteration, run ahead but never asked for,
    divides by zero: that warning reaches the client with the reply to the op after the loop
    (which warns of nothing)."""
    x = xp.zeros(4)
    log = []
    for i in range(n):
        with warnings.catch_warnings(record=True) as got, np.errstate(divide="warn"):
            warnings.simplefilter("always")
            x = x + 1.0
            y = 1.0 / (x - (n + 1))   # (a zero at iteration n: never run by the program)
            float(y[0])
        log.append(len(got))
    with warnings.catch_warnings(record=True) as got, np.errstate(divide="warn"):
        warnings.simplefilter("always")
        z = x * 2
        float(z[0])
    log.append(("after the loop", [str(w.message) for w in got]))
    return log


def repro_param_cast_warning_lost(xp, n):
    """A Python float that does not fit float16 (``overflow encountered in cast``) as a
    constant parameter of a held stretch: NumPy and replay off warn every iteration, a held
    replay only while the parameter's value is first written."""
    h = xp.ones(4, dtype=xp.float16)
    counts = []
    for i in range(n):
        with warnings.catch_warnings(record=True) as got, np.errstate(all="warn"):
            warnings.simplefilter("always")
            y = h * 70000.0
            float(y[0])
        counts.append(len(got))
    return counts


def repro_lane_stepping_float(xp, n):
    """A hot loop whose float parameter steps (0.5 * i): the steady lane's ``after_reply``
    raises AttributeError in the worker (a traceback on the pool's standard error; the
    values stay right)."""
    x = xp.linspace(0, 1, 8)
    out = []
    for i in range(n):
        out.append(fbits(float((x * (0.5 * i)).sum())))
    return out


PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (float16_accumulate, 60, True),
        (complex64_rotation, 60, True),
        (int8_uint16_wraparound, 60, True),
        (bool_arithmetic, 60, True),
        (scalar_kind_zoo, 78, True),
        (same_value_different_type, 60, True),
        (mixed_precision_pairs, 70, True),
        (zero_d_only, 60, True),
        (empty_arrays, 60, True),
        (tiny_shapes, 60, True),
        (large_array_loop, 50, True),
        (noncontig_inputs_rotating, 60, True),
        (negative_stride_carried, 60, True),
        (view_or_copy_carried, 60, True),
        (reduction_axis_cycle, 72, True),
        (arg_reads_feed_back, 60, True),
        (scans_and_joins, 60, True),
        (take_put_negative_indices, 60, True),
        (linalg_in_loop, 60, True),
        (fft_in_loop, 60, True),
        (fft_float32, 60, True),
        (variable_result_counts, 60, True),
        (nested_loops_sharing, 60, True),
        (generator_loop, 60, True),
        (comprehension_loop, 60, True),
        (while_converge_counts, 50, True),
        (several_reads_per_iteration, 60, True),
        (ellipsis_write_alias, 60, True),
        (errors_mid_body, 60, True),
        (failing_op_in_held_body, 60, True),
        (warnings_recorded, 60, True),
        (warnings_as_errors, 60, True),
        (warning_line_numbers, 60, True),
        (astype_copy_false_alias, 60, True),
        (copy_vs_asarray, 60, True),
        (out_into_views, 60, True),
        (int64_edge_scalars, 60, True),
        (nan_inf_zero_scalars, 60, True),
        (cycling_scalar_params, 60, True),
        (ping_pong_inputs, 60, True),
        (frees_pattern_changes, 60, True),
        (hot_sync_long, 1200, True),
        (carried_long, 1200, True),
        (carried_long_with_gaps, 1200, True),
        (run_twice_with_gc, 50, True),
        (input_written_by_other_stretch, 60, True),
        (body_tail_changes, 60, True),
        (same_read_twice, 60, True),
        (uint8_negative_comparisons, 60, True),
        (integer_negative_power, 60, True),
        (einsum_and_products, 60, True),
        (reductions_with_out_and_dtype, 60, True),
        (fill_and_full_changing, 70, True),
        (sort_variants, 60, True),
        (complex_scalars_into_real, 60, True),
        (bool_setitem_and_mask_ops, 60, True),
        (bool_vs_int_params, 72, True),
        (host_index_arrays_mutated, 60, True),
        (long_body_many_handles, 1300, True),
        (ahead_dtype_zoo, 60, True),
        (ahead_in_place_strided, 60, True),
        (ahead_last_iteration_changes, 60, True),
        (ahead_downloads, 60, True),
        (ahead_empty_and_zero_d, 60, True),
        (ahead_nan_signs, 60, True),
        (edge_float_params, 72, True),
        (metadata_of_views, 60, True),
        (param_overflow_warnings, 60, True),
        (lane_keeps_every_result, 80, True),
        (lane_drops_irregularly, 80, True),
        (lane_input_from_before_written, 60, True),
        (lane_float_steps_exact, 200, True),
        (lane_float_steps_inexact, 200, True),
        (lane_float_steps_through_zero, 80, True),
        (lane_two_floats_step, 200, True),
        (lane_float_step_overflows_float16, 60, True),
        (no_sync_dtype_zoo, 60, True),
        (no_sync_warning_counts, 60, True),
        (no_sync_views_rotating, 60, True),
        (repro_warning_line_in_replay, 50, True),
        (repro_lane_warning_leaks, 50, True),
        (repro_param_cast_warning_lost, 50, True),
        (repro_lane_stepping_float, 300, True),
    ]}
