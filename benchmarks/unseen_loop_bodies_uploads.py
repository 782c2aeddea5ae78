"""The eighth campaign of ``unseen_loops.py``: loops that upload a small host array every step
(a minibatch's indices, a sensor's reading, a mask). Since the forty-third session such an
upload is an op of its stretch, its data a frame of the replay's message, and the steady
lane runs the step when its message comes (docs/stretch-replay.md, "An upload inside a held
stretch"). Each is written as a notebook's user would, with the edges an upload has: the
stretch's first op, two a step, one kept past its step or written in place, another dtype or
shape now and then, a host buffer refilled, a boolean mask, a 0-d array, a NumPy number, one over
16 KiB beside a small one, a loop with no read.
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


def minibatch_by_uploaded_indices(xp, n):
    """SGD whose batch is picked by indices drawn on the host, the loss read each step."""
    x_all, w = _data(xp, 2048, 16, 11), xp.zeros(16, dtype=xp.float32)
    y_all = x_all @ xp.linspace(-1, 1, 16, dtype=xp.float32)
    picks = np.random.default_rng(12)
    out = []
    for _ in range(n):
        idx = xp.asarray(picks.integers(0, 2048, 128))
        xb, yb = x_all[idx], y_all[idx]
        err = xb @ w - yb
        out.append(fbits(float((err * err).mean())))
        w -= 0.1 * (xb.T @ err) / 128
    return out + [host(xp, w)]


def reading_uploaded_first(xp, n):
    """A filter fed eight readings a step: the upload is the stretch's first op."""
    readings = np.random.default_rng(13)
    state = xp.zeros(8, dtype=xp.float64)
    out = []
    for _ in range(n):
        obs = xp.asarray(readings.random(8))
        state = 0.8 * state + 0.2 * obs
        out.append(fbits(float(state.max())))
    return out + [host(xp, state)]


def two_uploads_a_step(xp, n):
    """Rows and their weights both drawn on the host each step."""
    x_all = _data(xp, 512, 4, 14, np.float64)
    rng = np.random.default_rng(15)
    total = xp.zeros(4)
    for _ in range(n):
        idx = xp.asarray(rng.integers(0, 512, 16))
        weights = xp.asarray(rng.random(16))
        total += (x_all[idx] * weights[:, None]).sum(axis=0)
        float(total[0])
    return [host(xp, total)]


def indices_kept_every_step(xp, n):
    """Every step's uploaded indices kept to the end, and each step's gathered sum."""
    x_all = _data(xp, 256, 2, 16, np.float64)
    rng = np.random.default_rng(17)
    kept, sums = [], []
    for _ in range(n):
        idx = xp.asarray(rng.integers(0, 256, 8))
        kept.append(idx)
        sums.append(fbits(float(x_all[idx].max())))
    return sums + [host(xp, k) for k in kept]


def upload_written_in_place(xp, n):
    """The uploaded indices shifted in place before they pick rows."""
    x_all = _data(xp, 300, 3, 18, np.float64)
    rng = np.random.default_rng(19)
    out = []
    for _ in range(n):
        idx = xp.asarray(rng.integers(0, 290, 10))
        idx += 5
        out.append(fbits(float(x_all[idx].min())))
    return out


def dtype_switches_now_and_then(xp, n):
    """Indices uploaded as int64, and as int32 every seventh step."""
    x_all = _data(xp, 128, 4, 20, np.float64)
    rng = np.random.default_rng(21)
    out = []
    for step in range(n):
        idx = rng.integers(0, 128, 6)
        idx = xp.asarray(idx.astype(np.int32) if step % 7 == 3 else idx)
        out.append(fbits(float(x_all[idx].max())))
    return out


def short_batch_each_epoch(xp, n):
    """Ten batches of 30 indices an epoch, its last one of 17."""
    x_all = _data(xp, 400, 2, 22, np.float64)
    rng = np.random.default_rng(23)
    out = []
    for step in range(n):
        size = 17 if step % 10 == 9 else 30
        idx = xp.asarray(rng.integers(0, 400, size))
        out.append(fbits(float(x_all[idx].max())))
    return out


def host_buffer_refilled(xp, n):
    """One host buffer refilled each step and copied up (``xp.array``), then spoilt."""
    x_all = _data(xp, 64, 4, 24, np.float64)
    rng = np.random.default_rng(25)
    buf = np.empty(12, dtype=np.int64)
    out = []
    for step in range(n):
        buf[:] = rng.integers(0, 64, 12)
        idx = xp.array(buf)
        buf[:] = step % 64
        out.append(fbits(float(x_all[idx].min())))
    return out


def boolean_mask_uploaded(xp, n):
    """A mask drawn on the host each step chooses between two arrays."""
    a = _data(xp, 1, 256, 26, np.float64)[0]
    b = -a
    rng = np.random.default_rng(27)
    acc = xp.zeros(256)
    for _ in range(n):
        mask = xp.asarray(rng.random(256) > 0.5)
        acc += xp.where(mask, a, b)
        float(acc[3])
    return [host(xp, acc)]


def zero_d_reading(xp, n):
    """A 0-d host array uploaded each step (it goes as a scalar)."""
    x = xp.linspace(0, 1, 32)
    out = []
    for step in range(n):
        scale = xp.asarray(np.array(1.0 + step * 0.25))
        out.append(fbits(float((x * scale).max())))
    return out


def numpy_number_learning_rate(xp, n):
    """A learning rate kept as a NumPy number on the host and uploaded each step
    (``xp.asarray(np.float32(lr))``), decayed between steps; the update's norm read."""
    w = xp.linspace(-1, 1, 64, dtype=xp.float32)
    lr = np.float32(0.5)
    out = []
    for _ in range(n):
        rate = xp.asarray(lr)
        w = w - rate * (w * w * w)
        out.append(fbits(float(xp.abs(w).max())))
        lr = np.float32(lr * np.float32(0.97))
    return out + [host(xp, w)]


def large_and_small_upload(xp, n):
    """An upload over 16 KiB (sent at once, zero-copy) and a small one in the same step."""
    rng = np.random.default_rng(28)
    acc = xp.zeros(3000)
    out = []
    for _ in range(n):
        big = xp.asarray(rng.random(3000))
        small = xp.asarray(rng.integers(0, 3000, 5))
        acc += big
        out.append(fbits(float(acc[small].max())))
    return out + [host(xp, acc)]


def no_read_in_the_loop(xp, n):
    """Indices uploaded each step with no read until the end (cut into pieces)."""
    x_all = _data(xp, 200, 4, 29, np.float64)
    rng = np.random.default_rng(30)
    acc = xp.zeros(4)
    for _ in range(n * 4):
        idx = xp.asarray(rng.integers(0, 200, 3))
        acc = acc * 0.5 + x_all[idx].max(axis=0)
    return [host(xp, acc)]


PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (minibatch_by_uploaded_indices, 60, False),   # (a matrix product: cuBLAS's bits)
        (reading_uploaded_first, 60, True),
        (two_uploads_a_step, 60, False),   # (a sum: CuPy's reduction order)
        (indices_kept_every_step, 60, True),
        (upload_written_in_place, 60, True),
        (dtype_switches_now_and_then, 60, True),
        (short_batch_each_epoch, 60, True),
        (host_buffer_refilled, 60, True),
        (boolean_mask_uploaded, 60, True),
        (zero_d_reading, 60, True),
        (numpy_number_learning_rate, 60, True),
        (large_and_small_upload, 60, True),
        (no_read_in_the_loop, 60, True),
    ]}
