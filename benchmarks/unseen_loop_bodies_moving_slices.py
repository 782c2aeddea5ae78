"""The sixth campaign of ``unseen_loops.py``: loops that slice their data at bounds that move
every step (``x_all[j:j + batch]``, ``rows[i]``, a window that slides). A basic index's ints
are stretch parameters (protocol/stretches.py, ``basic_index``): these loops are held and
replayed, where each step's bounds made a new stretch before. Each is written as a notebook's
user would, with the edges a moving view has: a batch kept into the next step, a write
through the view, an epoch's short last batch, negative bounds, a column window that is not
contiguous, an int index that walks the rows, a step, a view kept past the loop and written.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from unseen_loop_bodies import fbits


def host(xp, a):
    return np.asarray(a) if xp is np else a.get()


def _data(xp, rows, cols, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.normal(0, 1, (rows, cols)).astype(dtype))


def minibatch_sgd_in_order(xp, n):
    """Linear regression by SGD over the data in order, the loss read every step."""
    x_all, w = _data(xp, 2048, 16, 1), xp.zeros(16, dtype=xp.float32)
    y_all = x_all @ xp.linspace(-1, 1, 16, dtype=xp.float32)
    out = []
    for step in range(n):
        j = (step * 128) % (2048 - 128)
        xb, yb = x_all[j:j + 128], y_all[j:j + 128]
        err = xb @ w - yb
        out.append(fbits(float((err * err).mean())))
        w -= 0.1 * (xb.T @ err) / 128
    return out + [host(xp, w)]


def batch_kept_into_the_next_step(xp, n):
    """The gradient of the last step's batch applied at the start of the next (the batch an
    input of the next stretch that shares the data's memory; the weights written)."""
    x_all, w = _data(xp, 1000, 8, 2, np.float64), xp.zeros(8)
    prev = None
    out = []
    for step in range(n):
        if prev is not None:
            w -= 0.01 * prev.sum(axis=0)
        j = (step * 37) % 960
        xb = x_all[j:j + 40]
        out.append(fbits(float((xb @ w).sum())))
        prev = xb
    return out + [host(xp, w)]


def epochs_with_a_short_last_batch(xp, n):
    """Batches of 100 over 950 rows: each epoch's last is 50 long (another shape)."""
    x_all = _data(xp, 950, 4, 3)
    out = []
    step = 0
    while step < n:
        for j in range(0, 950, 100):
            xb = x_all[j:j + 100]
            out.append(fbits(float((xb * 0.5 + 1.0).sum())))
            out.append(xb.shape[0])
            step += 1
    return out


def sliding_window_mean(xp, n):
    """A moving average: windows of 32 that overlap by 31."""
    signal = xp.sin(xp.arange(600, dtype=xp.float64) * 0.05)
    out = []
    for i in range(n):
        out.append(fbits(float(signal[i:i + 32].mean())))
    return out


def rows_by_an_int_index(xp, n):
    """``a[i]`` walks the rows; ``a[-1 - i]`` walks them back from the end."""
    a = _data(xp, 120, 10, 4)
    out = []
    for i in range(n):
        out.append(fbits(float((a[i] * a[-1 - i]).sum())))
    return out


def write_through_the_view(xp, n):
    """``xb *= 1.01`` writes the data (a view, never a copy)."""
    a = xp.arange(1000, dtype=xp.float64).reshape(100, 10)
    out = []
    for i in range(n):
        xb = a[i % 90:i % 90 + 10]
        xb *= 1.01
        out.append(fbits(float(xb.sum())))
    return out + [host(xp, a)]


def column_window(xp, n):
    """``x[:, j:j + 4]``: a moving view that is not contiguous."""
    a = _data(xp, 64, 80, 5)
    out = []
    for i in range(n):
        j = (3 * i) % 76
        out.append(fbits(float((a[:, j:j + 4] * 2.0).sum(axis=0)[0])))
    return out


def strided_batches(xp, n):
    """Every other row of a moving block: ``x[j:j + 64:2]`` (a literal step)."""
    a = _data(xp, 700, 6, 6)
    out = []
    for i in range(n):
        j = (i * 9) % 600
        out.append(fbits(float(a[j:j + 64:2].std())))
    return out


def negative_bounds_move(xp, n):
    """Bounds counted from the end: ``x[-k - 8:-k]``."""
    a = xp.arange(500, dtype=xp.float32)
    out = []
    for i in range(n):
        k = i + 1
        out.append(fbits(float((a[-k - 8:-k] ** 2).sum())))
    return out


def batch_kept_past_the_loop_then_written(xp, n):
    """The last batch is a view of the data: written after the loop, the data changes."""
    a = xp.arange(800, dtype=xp.float32).reshape(200, 4)
    xb = None
    out = []
    for i in range(n):
        xb = a[i:i + 3]
        out.append(fbits(float(xb.sum())))
    xb[0] = -1.0
    return out + [host(xp, a)]


def image_patches(xp, n):
    """A 2-D patch that moves over an image: ``img[r:r + 8, c:c + 8]``."""
    img = _data(xp, 64, 64, 7)
    out = []
    for i in range(n):
        r, c = (i * 5) % 56, (i * 3) % 56
        patch = img[r:r + 8, c:c + 8]
        out.append(fbits(float((patch - patch.mean()).max())))
    return out


def numpy_int_bounds(xp, n):
    """Bounds that are NumPy integers (a loop over ``np.arange``)."""
    a = _data(xp, 300, 5, 8)
    out = []
    for j in np.arange(n, dtype=np.int64):
        out.append(fbits(float(a[j:j + np.int64(5)].sum())))
    return out


#: name: (function, iterations, also compared with NumPy)
PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (minibatch_sgd_in_order, 60, False),   # (a matrix product: cuBLAS's bits, not NumPy's)
        (batch_kept_into_the_next_step, 60, False),
        (epochs_with_a_short_last_batch, 60, True),
        (sliding_window_mean, 60, True),
        (rows_by_an_int_index, 60, True),
        (write_through_the_view, 60, True),
        (column_window, 60, True),
        (strided_batches, 60, False),   # (std: CuPy's reduction order)
        (negative_bounds_move, 60, True),
        (batch_kept_past_the_loop_then_written, 60, True),
        (image_patches, 60, True),
        (numpy_int_bounds, 60, True),
    ]}
