"""The ninth campaign of ``unseen_loops.py``: loops that call functions of several results
(``divmod``, ``split``, ``meshgrid``, ``unique(..., return_counts=True)``, ``histogram``,
``linalg.qr``/``eigh``, ``gradient``, ``nonzero``) or ``where(c, x, y)``, each step. Since the
forty-seventh session such a call whose count the arguments tell is issued with no wait
(kernelproxy/result_structures.py; docs/stretch-replay.md, "Calls of several results issued
with no wait"). Each is written as a notebook's user would, with the edges such a call has:
its results kept or dropped, a piece written in place, a refused call caught, a fresh mask's
``nonzero`` (still waited for), a loop with no read, a call in the middle of a long step.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from unseen_loop_bodies import fbits


def host(xp, a):
    return np.asarray(a) if xp is np else a.get()


def _field(xp, n, seed):
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.random(n))


def leaky_relu_where_step(xp, n):
    """A leaky-ReLU layer trained by hand: ``where`` for the activation and its gradient's
    mask, the loss read each step."""
    x, target = _field(xp, 512, 1) - 0.5, _field(xp, 512, 2) - 0.5
    w = xp.ones(512)
    out = []
    for _ in range(n):
        z = x * w
        a = xp.where(z > 0, z, 0.01 * z)
        err = a - target
        w = w - 0.05 * err * xp.where(z > 0, 1.0, 0.01) * x
        out.append(fbits(float((err * err).max())))
    return out, host(xp, w)


def divmod_clock(xp, n):
    """Seconds split into minutes and seconds by ``divmod`` (the function and Python's),
    then hours by another; the largest of each read."""
    t = xp.arange(0.0, 4000.0, 37.0)
    out = []
    for i in range(n):
        minutes, seconds = xp.divmod(t, 60.0)
        hours, minutes = divmod(minutes, 60.0)
        out.append((fbits(float(hours.max())), fbits(float(minutes.max())), fbits(float(seconds.min()))))
        t = t + 13.0 * (i % 3)
    return out


def split_into_chunks(xp, n):
    """A signal cut into four chunks by ``split``, each chunk's peak kept in a list, the
    chunks' peaks read together; ``array_split`` into three at odd steps."""
    x = _field(xp, 400, 3)
    out = []
    for i in range(n):
        chunks = xp.split(x, 4) if i % 2 == 0 else xp.array_split(x, 3)
        peaks = [c.max() for c in chunks]
        out.append([fbits(float(p)) for p in peaks])
        x = (x * 1.7 + 0.1) % 1.0
    return out


def meshgrid_field_step(xp, n):
    """A 2-d field from ``meshgrid`` of coordinates that move each step (``xy`` and
    ``ij`` in turn), its peak read."""
    gx, gy = xp.linspace(-1, 1, 24), xp.linspace(-1, 1, 16)
    out = []
    for i in range(n):
        X, Y = xp.meshgrid(gx + 0.01 * i, gy, indexing="xy" if i % 2 else "ij")
        field = xp.exp(-(X * X + Y * Y) * 3.0)
        out.append((X.shape, fbits(float(field.max()))))
    return out


def unique_counts_and_histogram(xp, n):
    """Values binned each step: ``unique`` with counts of the bin numbers and a
    ``histogram`` of the values; the largest count and the edges' sum read."""
    x = _field(xp, 300, 4)
    out = []
    for _ in range(n):
        values, counts = xp.unique(xp.floor(x * 8), return_counts=True)
        hist, edges = xp.histogram(x, bins=6, range=(0.0, 1.0))
        out.append((int(counts.max()), int(values.size), host(xp, hist).tolist(),
                    fbits(float(edges.sum()))))
        x = (x * 1.37 + 0.05) % 1.0
    return out


def orthogonal_iteration(xp, n):
    """Orthogonal iteration by ``linalg.qr`` on a 12 x 12 matrix, the Rayleigh quotient's
    trace read each step; ``eigh`` of the small matrix every fifth step."""
    rng = np.random.default_rng(5)
    m = rng.normal(size=(12, 12))
    A = xp.asarray(m + m.T)
    Q = xp.eye(12)[:, :3]
    out = []
    for i in range(n):
        Q, R = xp.linalg.qr(A @ Q)
        H = Q.T @ A @ Q
        out.append(fbits(float(xp.trace(H))))
        if i % 5 == 4:
            w, v = xp.linalg.eigh(H)
            out.append(fbits(float(w.max())))
    return out


def gradient_of_a_field(xp, n):
    """``gradient`` of a 2-d field on both axes and on one, the gradient's norm read."""
    f = _field(xp, 120, 6).reshape(10, 12)
    out = []
    for i in range(n):
        gy, gx = xp.gradient(f)
        g1 = xp.gradient(f, axis=1)
        out.append((fbits(float((gx * gx + gy * gy).sum())), fbits(float(g1.max()))))
        f = f + 0.01 * gx - 0.02 * gy
    return out, host(xp, f)


def modf_frexp_no_read(xp, n):
    """A loop with no read: ``modf`` and ``frexp`` each step, a read after it."""
    x = _field(xp, 64, 7) * 9.0
    for _ in range(n):
        frac, whole = xp.modf(x)
        mant, expo = xp.frexp(x + 1.0)
        x = whole * 0.5 + frac * 3.0 + mant + expo * 0.01
    return host(xp, x)


def split_refused_then_fine(xp, n):
    """An equal ``split`` that does not divide, tried every fourth step and caught, then
    ``array_split``: the error where CuPy raises it, the loop going on."""
    x = _field(xp, 30, 8)
    out = []
    errors = 0
    for i in range(n):
        if i % 4 == 0:
            try:
                xp.split(x, 7)
            except ValueError:
                errors += 1
        pieces = xp.array_split(x, 7)
        out.append(fbits(float(pieces[-1].sum())))
        x = (x * 1.3 + 0.2) % 1.0
    return out, errors


def nonzero_of_a_fresh_mask(xp, n):
    """``nonzero`` and one-argument ``where`` of a mask made that step (its ndim not known
    on the client yet: waited for), the indices used to write in place."""
    x = _field(xp, 200, 9)
    out = []
    for _ in range(n):
        (idx,) = xp.nonzero(x > 0.7)
        x[idx] *= 0.5
        rows = xp.where(x < 0.1)[0]
        x[rows] += 0.3
        out.append((int(idx.size), fbits(float(x.sum()))))
    return out


def atleast_and_broadcast(xp, n):
    """``atleast_2d`` of two arrays and ``broadcast_arrays`` of a row and a column each
    step, a piece written in place, the sum read."""
    row, col = _field(xp, 8, 10), _field(xp, 5, 11).reshape(5, 1)
    out = []
    for i in range(n):
        a, b = xp.atleast_2d(row, col[0])
        R, C = xp.broadcast_arrays(a, col)
        grid = R * C + b
        grid[0] += 1.0
        out.append((a.shape, fbits(float(grid.sum()))))
        row = (row * 1.1 + 0.05 * i) % 1.0
    return out


def long_step_with_divmod_inside(xp, n):
    """A step of 30 elementwise ops with a ``divmod`` in its middle, the step's sum read:
    the ops before and after the call are stretches of their own, replayed."""
    x, y = _field(xp, 1024, 12), _field(xp, 1024, 13)
    out = []
    for _ in range(n):
        for _k in range(7):
            x = x * 0.99 + y * 0.01
            y = y - x * 0.001
        q, r = xp.divmod(x * 10.0, 1.0)
        for _k in range(7):
            x = x + r * 0.001
            y = y * 0.999 + q * 1e-4
        out.append(fbits(float(x.sum() + y.sum())))
    return out


PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (leaky_relu_where_step, 60, True),
        (divmod_clock, 60, True),
        (split_into_chunks, 60, True),
        (meshgrid_field_step, 60, False),   # (exp: CUDA's bits)
        (unique_counts_and_histogram, 60, False),   # (histogram's edges: CuPy's linspace)
        (orthogonal_iteration, 50, False),   # (matrix products and QR: the libraries' bits)
        (gradient_of_a_field, 60, False),    # (a sum: CuPy's reduction order)
        (modf_frexp_no_read, 200, True),
        (split_refused_then_fine, 60, False),   # (a sum)
        (nonzero_of_a_fresh_mask, 60, False),   # (a sum)
        (atleast_and_broadcast, 60, False),     # (a sum)
        (long_step_with_divmod_inside, 60, False),   # (a sum)
    ]}
