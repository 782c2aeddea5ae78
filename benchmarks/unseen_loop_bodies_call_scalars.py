"""The fifth campaign of ``unseen_loops.py``: loops whose scalar changes every step through a
call, not an operator: a two-operand ufunc's (``cupy.maximum(x, floor_i)``), ``cupy.clip``'s
bounds, a random distribution's own scalars (``rs.normal(0, sigma_i, n)``). Such scalars
are stretch parameters (protocol/stretches.py, ``leading_params``): these loops are held
and replayed, where each step's value made a new stretch before. Each is written as a
notebook's user would, with the edges a parameter has: a zero's sign, a NaN, an int that
turns float, a value an int dtype cannot hold, a draw given a scale it refuses.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from unseen_loop_bodies import fbits


def host(xp, a):
    return np.asarray(a) if xp is np else a.get()


def decay_in_place(xp, n):
    """``multiply(x, 1 - 0.002 i, out=x)``: a decay written through ``out=``."""
    x = xp.linspace(-1.0, 1.0, 257)
    out = []
    for i in range(n):
        xp.multiply(x, 1.0 - 0.002 * i, out=x)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, x)]


def relu_floor_rises(xp, n):
    """``maximum(x, floor_i)`` on float32, the floor a Python float."""
    x = xp.linspace(-3.0, 3.0, 300).astype(xp.float32)
    out = []
    for i in range(n):
        y = xp.maximum(x, -2.0 + 0.05 * i) * 1.5
        out.append(fbits(float(y.mean())))
    return out


def clip_bounds_widen(xp, n):
    """``clip(x, -b_i, b_i)``, a clip with one bound None and an array's ``clip``."""
    x = xp.sin(xp.arange(500, dtype=xp.float64))
    out = []
    for i in range(n):
        b = 0.1 + 0.015 * i
        y = xp.clip(x * 1.3, -b, b) + xp.clip(x, None, b) + (x * 0.5).clip(-b / 2, b)
        out.append(fbits(float(y.sum())))
    return out


def zero_sign_flips(xp, n):
    """``copysign(x, s)`` with ``s`` 0.0 and -0.0 in turn: equal values, other bits."""
    x = xp.linspace(-1.0, 1.0, 64)
    out = []
    for i in range(n):
        y = xp.copysign(x, -0.0 if i % 2 else 0.0)
        out.append(fbits(float(y.sum())))
    return out


def nan_floor(xp, n):
    """``fmax`` and ``maximum`` against a floor that is NaN every fifth step."""
    x = xp.linspace(-1.0, 1.0, 100)
    out = []
    for i in range(n):
        f = math.nan if i % 5 == 4 else 0.01 * i
        out.append(fbits(float(xp.fmax(x, f).sum())))
        out.append(fbits(float(xp.nansum(xp.maximum(x, f)))))
    return out


def int_then_float_threshold(xp, n):
    """``greater(x, t)`` with ``t`` an int, then a float, then a NumPy float32."""
    x = xp.arange(200, dtype=xp.int16)
    out = []
    for i in range(n):
        t = i if i < n // 3 else (i + 0.5 if i < 2 * n // 3 else np.float32(i))
        out.append(int(xp.greater(x, t).sum()))
        out.append(str(xp.add(x, t).dtype))
    return out


def int_dtype_overflow(xp, n):
    """``add(int8 array, k)`` where ``k`` once does not fit int8: NumPy's (and CuPy's)
    error at that step, the loop goes on."""
    x = xp.arange(-50, 50, dtype=xp.int8)
    out = []
    for i in range(n):
        try:
            out.append(int(xp.add(x, 300 if i == n // 2 else i % 7).sum()))
        except OverflowError:
            out.append("OverflowError")
    return out


def shifts_and_ldexp(xp, n):
    """Integer parameters: ``left_shift(x, k)``, ``ldexp(y, k)``, ``bitwise_and(x, mask)``."""
    x = xp.arange(100, dtype=xp.int64)
    y = xp.linspace(0.5, 1.5, 100)
    out = []
    for i in range(n):
        k = i % 5
        out.append(int(xp.bitwise_and(xp.left_shift(x, k), 255 - i).sum()))
        out.append(fbits(float(xp.ldexp(y, k - 2).sum())))
    return out


def dtype_given_to_the_call(xp, n):
    """``add(x_f32, s, dtype=float64)``: the call's dtype casts the scalar (found by review:
    a replay had cast it to float32 first), constant and changing."""
    x = xp.linspace(-1.0, 1.0, 64).astype(xp.float32)
    out = []
    for i in range(n):
        y = xp.add(x, 0.1, dtype=xp.float64) * xp.multiply(x, 0.3 + 0.001 * i, dtype=xp.float64)
        out.append(fbits(float(y.sum())))
    return out


def clip_by_a_float64_array(xp, n):
    """``clip(x_f32, lo_f64, hi)`` and ``x.clip(lo_f64, hi)``: float64 from the array bound
    (found by review: a replay had taken float32 from ``x`` alone)."""
    x = xp.linspace(-1.0, 1.0, 64).astype(xp.float32)
    lo = xp.full(64, -0.5)
    out = []
    for i in range(n):
        y = xp.clip(x, lo, 0.1) + x.clip(lo, 0.1 + 0.001 * i)
        out.append(fbits(float(y.sum())))
    return out


def langevin_normal(xp, n):
    """Langevin steps with a RandomState's ``normal(0, sigma_i, size)``, sigma annealed."""
    rs = xp.random.RandomState(31)
    x = xp.zeros(128)
    out = []
    for i in range(n):
        eta = 0.1 / (1.0 + 0.05 * i)
        x = x - eta * 4.0 * x * (x * x - 1.0) + rs.normal(0.0, math.sqrt(2.0 * eta), 128)
        out.append(fbits(float(x.mean())))
    return out + [host(xp, rs.normal(0.0, 1.0, 3))]


def module_uniform_bounds_move(xp, n):
    """The module's ``random.uniform(lo_i, hi_i, size)`` (the global RandomState), bounds
    that move every step, and ``random.randint(0, k_i, size)``."""
    xp.random.seed(32)
    out = []
    for i in range(n):
        u = xp.random.uniform(-1.0 - 0.01 * i, 1.0 + 0.02 * i, 64)
        k = xp.random.randint(0, 10 + i, 16)
        out.append(fbits(float(u.sum())))
        out.append(int(k.sum()))
    return out + [host(xp, xp.random.uniform(0.0, 1.0, 2))]


def poisson_rate_grows(xp, n):
    """A RandomState's ``poisson(lam_i, size)``: integer draws at a rate that grows."""
    rs = xp.random.RandomState(33)
    out = []
    for i in range(n):
        c = rs.poisson(1.0 + 0.1 * i, 50)
        out.append(int(c.sum()))
    return out


def scale_turns_negative(xp, n):
    """A ``normal`` whose scale goes below zero near the end: whatever the device does with
    it (NumPy refuses it; the pool's answer is compared with the pool's without replay)."""
    rs = xp.random.RandomState(34)
    out = []
    for i in range(n):
        try:
            out.append(fbits(float(rs.normal(0.0, 1.0 - i / (n - 5), 40).sum())))
        except ValueError:
            out.append("ValueError")
    return out + [host(xp, rs.normal(0.0, 1.0, 2))]


def generator_gamma_shape(xp, n):
    """A Generator's ``gamma(shape_i, 1.0, size)`` (drawn between the graphs) beside its
    ``random`` (made inside them)."""
    rng = xp.random.default_rng(35)
    out = []
    for i in range(n):
        g = rng.gamma(1.0 + 0.05 * i, 1.0, 40) + rng.random(40)
        out.append(fbits(float(g.sum())))
    return out + [host(xp, rng.random(3))]


#: name: (function, iterations, also compared with NumPy)
PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (decay_in_place, 60, True),
        (relu_floor_rises, 60, True),
        (clip_bounds_widen, 60, True),
        (zero_sign_flips, 60, True),
        (nan_floor, 60, True),
        (int_then_float_threshold, 60, True),
        (int_dtype_overflow, 60, True),
        (shifts_and_ldexp, 60, True),
        (dtype_given_to_the_call, 60, True),
        (clip_by_a_float64_array, 60, True),
        (langevin_normal, 60, False),
        (module_uniform_bounds_move, 60, False),
        (poisson_rate_grows, 60, False),
        (scale_turns_negative, 60, False),
        (generator_gamma_shape, 60, False),
    ]}
