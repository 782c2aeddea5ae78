"""The twelfth campaign of ``unseen_loops.py``: loops whose step takes a scalar that follows a
schedule, as a notebook's user writes a learning rate, a temperature or a step size. Many are
NumPy's narrow floats (``np.float32``, ``np.float16``), which CuPy treats as strong scalars
(NEP 50): a float32 operand keeps a float32 step float32, where a Python float would too, but
a float64 one would not. The schedules are of the shapes users write: an exponential decay
written two ways (``0.1 * 0.97 ** i`` and ``lam *= 0.98``), a harmonic one, a step decay
(halved every ten steps), a cosine one, a linear warm-up then a decay, a temperature over a
logarithm, an average of the loss the step before read back, and a float16 step. The
forty-ninth session guessed a narrow float's decay from its last values on the NumPy device
only (worker/narrow_floats._next_on_curve); these loops measure that and the schedules it
does not model, on a GPU against local CuPy.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from unseen_loop_bodies import fbits


def host(xp, a):
    return np.asarray(a) if xp is np else a.get()


def _start(xp, size, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.uniform(-1, 1, size).astype(dtype))


def float32_power_decay(xp, n):
    """``lr = np.float32(0.1 * 0.97 ** i)`` in a gradient step, the loss read each step."""
    x, target = _start(xp, 512, 1), _start(xp, 512, 2)
    out = []
    for i in range(n):
        lr = np.float32(0.1 * 0.97 ** i)
        x = x - lr * (x - target)
        out.append(fbits(float(((x - target) ** 2).mean())))
    return out + [host(xp, x)]


def float32_carried_decay(xp, n):
    """``lam = np.float32(lam * 0.98)`` carried from step to step, a norm read each step."""
    x, lam = _start(xp, 300, 3), np.float32(0.5)
    out = []
    for _ in range(n):
        x = xp.tanh(x * (1 + lam))
        lam = np.float32(lam * 0.98)
        out.append(fbits(float(xp.abs(x).max())))
    return out + [host(xp, x)]


def float32_harmonic(xp, n):
    """``eta = np.float32(0.5 / (1 + 0.05 * i))``, a Robbins–Monro step, read each step."""
    x = _start(xp, 256, 4)
    out = []
    for i in range(n):
        eta = np.float32(0.5 / (1 + 0.05 * i))
        x = x + eta * (xp.cos(x) - x)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, x)]


def step_decay_halved(xp, n):
    """``lr = 0.2 * 0.5 ** (i // 10)`` (a Python float, halved every ten steps)."""
    x, target = _start(xp, 400, 5), _start(xp, 400, 6)
    out = []
    for i in range(n):
        lr = 0.2 * 0.5 ** (i // 10)
        x = x - lr * xp.sign(x - target) * xp.abs(x - target) ** 0.5
        out.append(fbits(float(xp.abs(x - target).max())))
    return out + [host(xp, x)]


def cosine_schedule_float32(xp, n):
    """``lr = np.float32(0.05 * (1 + cos(pi * i / n)))``: a cosine annealing."""
    x = _start(xp, 128, 7)
    out = []
    for i in range(n):
        lr = np.float32(0.05 * (1 + math.cos(math.pi * i / n)))
        x = x - lr * (x ** 3 - x)
        out.append(fbits(float((x * x).sum())))
    return out + [host(xp, x)]


def warmup_then_decay(xp, n):
    """A linear warm-up over ten steps, then ``1 / sqrt(step)`` decay (a transformer's)."""
    x, g = _start(xp, 1024, 8), _start(xp, 1024, 9)
    out = []
    for i in range(1, n + 1):
        lr = 1e-2 * min(i / 10, (10 / i) ** 0.5)
        x = x - lr * (x + 0.1 * g)
        out.append(fbits(float(x.mean())))
    return out + [host(xp, x)]


def temperature_over_log(xp, n):
    """``T = np.float32(1 / log(i + 2))``: a simulated annealing's temperature, scores read."""
    x = _start(xp, 200, 10)
    out = []
    for i in range(n):
        t = np.float32(1.0 / math.log(i + 2))
        x = x - 0.1 * (x - xp.sin(3 * x)) * t
        out.append(fbits(float(xp.exp(-x / t).sum())))
    return out + [host(xp, x)]


def loss_average_fed_back(xp, n):
    """A running average of the loss read (``ema = 0.9 * ema + 0.1 * loss``) scales the
    next step: a scalar the step before read."""
    x, ema = _start(xp, 256, 11), 1.0
    out = []
    for _ in range(n):
        x = x * (1 - 0.05 / (1 + ema))
        loss = float((x * x).mean())
        ema = 0.9 * ema + 0.1 * loss
        out.append(fbits(loss))
    return out + [host(xp, x)]


def float16_step(xp, n):
    """A float16 state stepped by a float16 scalar that decays (``np.float16(0.5 * 0.95**i)``)."""
    x = _start(xp, 160, 12, np.float16)
    out = []
    for i in range(n):
        h = np.float16(0.5 * 0.95 ** i)
        x = x + h * (x * 0.5 - x * x)
        out.append(fbits(float(x.astype(xp.float32).sum())))
    return out + [host(xp, x)]


def momentum_with_float32_rates(xp, n):
    """A heavy ball whose rate decays and whose momentum grows, both float32."""
    x, v, target = _start(xp, 700, 13), xp.zeros(700, dtype=xp.float32), _start(xp, 700, 14)
    out = []
    for i in range(n):
        lr = np.float32(0.05 * 0.99 ** i)
        beta = np.float32(min(0.9, 0.5 + 0.01 * i))
        v = beta * v - lr * (x - target)
        x = x + v
        out.append(fbits(float(xp.linalg.norm(x - target))))
    return out + [host(xp, x), host(xp, v)]


def decay_without_reads(xp, n):
    """A float32 decay in a loop with no read until the end (the decay alone carried)."""
    x, lam = _start(xp, 2048, 15), np.float32(1.0)
    for _ in range(n):
        x = x * lam + (1 - lam) * xp.sin(x)
        lam = np.float32(lam * 0.97)
    return [host(xp, x), fbits(float(lam))]


def two_schedules_in_one_step(xp, n):
    """A float64 step size (``0.3 / (i + 1)``) and a float32 noise scale (a decay) together."""
    x, noise = _start(xp, 300, 16, np.float64), _start(xp, 300, 17)
    out = []
    for i in range(n):
        step = 0.3 / (i + 1)
        scale = np.float32(0.02 * 0.9 ** i)
        x = x - step * x + scale * noise
        out.append(fbits(float(x.std())))
    return out + [host(xp, x)]


#: name: (function, iterations, also compared with NumPy)
PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (float32_power_decay, 60, False),   # (mean, std, norm, sum: CuPy's reduction order)
        (float32_carried_decay, 60, False),
        (float32_harmonic, 60, False),
        (step_decay_halved, 60, False),
        (cosine_schedule_float32, 60, False),
        (warmup_then_decay, 60, False),
        (temperature_over_log, 60, False),
        (loss_average_fed_back, 60, False),
        (float16_step, 60, False),
        (momentum_with_float32_rates, 60, False),
        (decay_without_reads, 60, False),
        (two_schedules_in_one_step, 60, False),
    ]}
