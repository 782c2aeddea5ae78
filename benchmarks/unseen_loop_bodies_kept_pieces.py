"""The fourteenth campaign of ``unseen_loops.py``: loops whose calls of several results are
joined to their held stretch (the fifty-third session's default) in the shapes that change
there: the pieces of ``linalg.qr``, ``linalg.svd`` and ``linalg.eigh`` kept past the step
(CuPy hands out views of its own buffers: kept_views.FRESH_PIECES), ``histogram`` with a
count of bins or an array of edges (its pieces predicted now), ``divmod`` and ``split`` of a
temporary whose metadata the client does not have yet (calls not settled: a batch of their
own, later ones two ops or slices), ``hsplit`` of a temporary fed on, ``modf`` and
``frexp`` in loops with no sync point. Written before they were measured on a GPU.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from unseen_loop_bodies import fbits
from unseen_loop_bodies_several_results import _field, host   # (the ninth campaign's)


def _matrix(xp, rows, cols, seed):
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.normal(size=(rows, cols)))


def qr_pieces_kept(xp, n):
    """``q, r = linalg.qr(a)`` each step, both kept past it (the last pair read at the
    end), the matrix drifting toward ``r`` and its corner read."""
    a = _matrix(xp, 9, 5, 41)
    out = []
    for _ in range(n):
        q, r = xp.linalg.qr(a)
        a = a * 0.9 + (q @ r) * 0.1 + 0.01
        out.append(fbits(float(r[0, 0])))
    return out, host(xp, q), host(xp, r)


def svd_of_a_wide_matrix_kept(xp, n):
    """``linalg.svd`` of a wide matrix (fewer rows than columns: CuPy transposes it first),
    ``u, s, vt`` kept past the step, the singular values' sum read."""
    a = _matrix(xp, 4, 7, 42)
    out = []
    for _ in range(n):
        u, s, vt = xp.linalg.svd(a, full_matrices=False)
        a = a + 0.02 * (u[:, :1] * s[:1]) @ vt[:1]
        out.append(fbits(float(s.sum())))
    return out, host(xp, vt)


def eigh_values_kept_in_a_list(xp, n):
    """``w, v = linalg.eigh(m)`` of a drifting symmetric matrix, each step's eigenvalues
    kept in a list, the top one read every fifth step."""
    b = _matrix(xp, 6, 6, 43)
    m = b + b.T
    kept = []
    out = []
    for i in range(n):
        w, v = xp.linalg.eigh(m)
        kept.append(w)
        top = v[:, -1:]
        m = m + 0.05 * (top @ top.T)
        if i % 5 == 4:
            out.append(fbits(float(w[-1])))
    return out, [host(xp, w) for w in kept[-3:]]


def histogram_counts_each_step(xp, n):
    """``histogram(x, bins=8)`` each step, its counts added to a running total, the total's
    sum read."""
    x = _field(xp, 400, 44)
    total = xp.zeros(8, dtype=xp.int64)
    out = []
    for _ in range(n):
        counts, edges = xp.histogram(x, bins=8)
        total = total + counts
        x = (x * 1.17 + 0.031) % 1.0
        out.append(int(total.sum()) + int(counts.max()))
    return out, host(xp, total), host(xp, edges)


def histogram_of_fixed_edges(xp, n):
    """``histogram`` against an array of edges made once, the counts' largest read."""
    x = _field(xp, 300, 45)
    edges = xp.linspace(0.0, 1.0, 11)
    out = []
    for _ in range(n):
        counts = xp.histogram(x, bins=edges)[0]
        x = (x * 0.93 + 0.05) % 1.0
        out.append(int(counts.max()))
    return out, host(xp, counts)


def divmod_of_a_fresh_temporary_no_sync(xp, n):
    """``divmod`` of a temporary each step and no sync point until the end: its first calls
    go before the client knows the temporary's dtype (not settled), later ones as
    ``floor_divide`` and ``remainder``."""
    x = _field(xp, 256, 46) * 10.0
    for _ in range(n):
        q, r = xp.divmod(x * 1.7 + 0.3, 1.3)
        x = q * 0.25 + r * 2.0
    return host(xp, x)


def split_of_a_temporary_kept_no_sync(xp, n):
    """``split`` of a temporary into three, the first and last kept in a list, no sync
    point until the end."""
    x = _field(xp, 90, 47)
    kept = []
    for _ in range(n):
        y = x * 1.5 - 0.2
        a, b, c = xp.split(y, 3)
        kept.append((a, c))
        x = xp.concatenate([b, c, a]) * 0.9 + 0.05
    return host(xp, x), [(host(xp, a), host(xp, c)) for a, c in kept[-2:]]


def hsplit_of_a_temporary_fed_on(xp, n):
    """``hsplit`` of a product's result (a temporary) into two column blocks, both fed to
    the next ops, the sum read."""
    x = _matrix(xp, 6, 8, 48) * 0.3
    w = _matrix(xp, 8, 8, 49) * 0.2
    out = []
    for _ in range(n):
        y = x @ w
        left, right = xp.hsplit(y, 2)
        x = xp.tanh(xp.concatenate([right, left], axis=1)) * 0.9 + x * 0.1
        out.append(fbits(float(x.sum())))
    return out


def modf_accumulated_no_sync(xp, n):
    """The integer part of ``modf`` added up, no sync point until the end."""
    x = _field(xp, 200, 50) * 6.0
    total = xp.zeros_like(x)
    for _ in range(n):
        frac, whole = xp.modf(x)
        total = total + whole
        x = frac * 5.5 + 0.75
    return host(xp, total), host(xp, x)


def frexp_exponents_kept(xp, n):
    """``frexp``'s exponents kept in a list each step (integer pieces), the mantissas fed
    back, read every fourth step."""
    x = _field(xp, 150, 51) * 40.0 + 1.0
    kept = []
    out = []
    for i in range(n):
        m, e = xp.frexp(x)
        kept.append(e)
        x = xp.ldexp(m, 3) * 0.7 + 1.0
        if i % 4 == 3:
            out.append(int(e.sum()))
    return out, [host(xp, e) for e in kept[-3:]]


PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (qr_pieces_kept, 40, False),                    # (cuSOLVER's bits)
        (svd_of_a_wide_matrix_kept, 40, False),         # (cuSOLVER's bits)
        (eigh_values_kept_in_a_list, 40, False),        # (cuSOLVER's bits)
        (histogram_counts_each_step, 60, False),        # (its edges: CuPy's linspace)
        (histogram_of_fixed_edges, 60, False),          # (linspace)
        (divmod_of_a_fresh_temporary_no_sync, 60, True),
        (split_of_a_temporary_kept_no_sync, 60, True),
        (hsplit_of_a_temporary_fed_on, 60, False),      # (a product's bits)
        (modf_accumulated_no_sync, 60, True),
        (frexp_exponents_kept, 60, True),
    ]}
