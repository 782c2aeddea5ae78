"""The thirteenth campaign of ``unseen_loops.py``: loops whose step holds a call of several
results where a held stretch would have to take it in — at the body's start, in its middle,
at its end, twice in one step — with the pieces used the ways a notebook's user uses them:
one dropped at once, one kept in a list past the step, one written in place, one read,
one fed to an operator, a count that changes with the input's ndim. Written for the
fifty-second session's held calls of several results (docs/stretch-replay.md, "Calls of
several results held"), before it was measured: the ninth campaign
(``unseen_loop_bodies_several_results.py``) was the slowest of the twelve (median 1.76x
local CuPy in run 304) and these shapes were not in it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from unseen_loop_bodies import fbits
from unseen_loop_bodies_several_results import _field, host   # (the ninth campaign's)


def modf_opens_the_step(xp, n):
    """``modf`` as the step's first op, both pieces used, the sum read each step."""
    x = _field(xp, 256, 21) * 7.0
    out = []
    for _ in range(n):
        frac, whole = xp.modf(x)
        x = whole * 0.75 + frac * 2.5 + 0.125
        out.append(fbits(float(x.sum())))
    return out, host(xp, x)


def frexp_in_the_middle(xp, n):
    """A scale step: ops, then ``frexp`` of their result and ``ldexp`` back with the
    exponent lowered, then more ops; the largest value read."""
    x = _field(xp, 512, 22) + 0.5
    out = []
    for i in range(n):
        y = x * 1.3 + 0.01 * (i % 5)
        mant, expo = xp.frexp(y)
        x = xp.ldexp(mant, expo - 1) + y * 0.25
        out.append(fbits(float(x.max())))
    return out, host(xp, x)


def modf_and_frexp_both(xp, n):
    """Two calls of several results in one step, the second on the first's piece."""
    x = _field(xp, 128, 23) * 5.0
    out = []
    for _ in range(n):
        frac, whole = xp.modf(x)
        mant, expo = xp.frexp(whole + 1.0)
        x = frac * 3.0 + mant * 2.0 + expo.astype(xp.float64) * 0.1
        out.append(fbits(float(x.min())))
    return out


def pieces_kept_in_a_list(xp, n):
    """Each step's integer part kept past the step (a list the user reads at the end),
    its fractional part dropped at once."""
    x = _field(xp, 64, 24) * 4.0
    kept = []
    for i in range(n):
        whole = xp.modf(x)[1]
        kept.append(whole)
        x = x * 1.01 + 0.03 * (i % 3)
        if i % 10 == 9:
            float(x.sum())
    return [host(xp, k) for k in kept[-5:]], host(xp, x)


def a_piece_written_in_place(xp, n):
    """``frexp``'s mantissa scaled in place before ``ldexp``: a write into a piece."""
    x = _field(xp, 300, 25) + 1.0
    out = []
    for _ in range(n):
        mant, expo = xp.frexp(x)
        mant *= 1.5
        x = xp.ldexp(mant, expo) * 0.5 + 0.25
        out.append(fbits(float(x.mean())))
    return out


def a_piece_fed_to_an_operator(xp, n):
    """A piece used by Python's operators at once (``whole + frac``, ``-frac``), the
    count of large values read each step."""
    x = _field(xp, 400, 26) * 3.0
    out = []
    for _ in range(n):
        frac, whole = xp.modf(x)
        x = (whole + frac * frac) * 0.9 - frac + 1.0
        out.append(int((x > 2.0).sum()))
    return out


def meshgrid_at_the_end(xp, n):
    """A step that ends with ``meshgrid`` of its moved coordinates (no read in the step);
    the grids' sum read every fifth step."""
    gx, gy = xp.linspace(0.0, 1.0, 16), xp.linspace(0.0, 2.0, 12)
    out = []
    for i in range(n):
        gx = gx * 0.99 + 0.01
        gy = gy * 1.01 - 0.02
        X, Y = xp.meshgrid(gx, gy)
        if i % 5 == 4:
            out.append(fbits(float((X * Y).max())))
    return out, host(xp, X), host(xp, Y)


def svd_each_step(xp, n):
    """``linalg.svd`` of a small matrix each step, the largest singular value read and
    the rank-one part taken out a little."""
    rng = np.random.default_rng(27)
    A = xp.asarray(rng.normal(size=(8, 6)))
    out = []
    for _ in range(n):
        u, s, vt = xp.linalg.svd(A, full_matrices=False)
        A = A - 0.05 * s[0] * (u[:, :1] @ vt[:1])
        out.append(fbits(float(s[0])))
    return out


def eigh_of_a_drifting_matrix(xp, n):
    """``linalg.eigh`` of a symmetric matrix that drifts toward its top eigenvector."""
    rng = np.random.default_rng(28)
    m = rng.normal(size=(10, 10))
    H = xp.asarray(m + m.T)
    out = []
    for _ in range(n):
        w, v = xp.linalg.eigh(H)
        top = v[:, -1:]
        H = H + 0.01 * (top @ top.T)
        out.append(fbits(float(w[-1])))
    return out


def nonzero_count_changes(xp, n):
    """``nonzero`` of a 1-d mask and, every third step, of a 2-d one: one piece, then two."""
    x = _field(xp, 120, 29)
    out = []
    for i in range(n):
        if i % 3 == 2:
            r, c = xp.nonzero(x.reshape(10, 12) > 0.8)
            out.append((int(r.size), int(c.sum())))
        else:
            (idx,) = xp.nonzero(x > 0.5)
            out.append(int(idx.size))
        x = (x * 1.3 + 0.07) % 1.0
    return out


PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (modf_opens_the_step, 60, False),          # (a sum)
        (frexp_in_the_middle, 60, True),
        (modf_and_frexp_both, 60, True),
        (pieces_kept_in_a_list, 60, True),
        (a_piece_written_in_place, 60, False),     # (a mean)
        (a_piece_fed_to_an_operator, 60, True),
        (meshgrid_at_the_end, 60, False),        # (linspace: CuPy's bits)
        (svd_each_step, 40, False),                # (cuSOLVER's bits)
        (eigh_of_a_drifting_matrix, 40, False),    # (cuSOLVER's bits)
        (nonzero_count_changes, 60, True),
    ]}
