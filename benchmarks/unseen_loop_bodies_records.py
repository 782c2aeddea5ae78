"""The eleventh campaign of ``unseen_loops.py``: loops that record each step into a device
array by index, as a notebook's user keeps a history without reading it every step:
``losses[i] = loss``, ``traj[i] = x``, ``hist[:, i] = x``, a ring buffer ``buf[i % 8] = x``,
a flag, a moving slice written, a NumPy integer or a negative index, a Python scalar
assigned, an entry that reads the one before, a slot added to in place, and a history large
enough (15 MB) that copying it costs more than the step. Since the forty-eighth session an
assignment's basic index has its ints as stretch parameters (protocol/stretches.indexed): the
capture bakes the index in and a replay given another runs the assignment eagerly on the
graph's buffer; before, each step's index made a new stretch key and such a loop was never
held (docs/stretch-replay.md, "A user's kernels captured and run ahead", the assignment's
index).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from unseen_loop_bodies import fbits


def host(xp, a):
    return np.asarray(a) if xp is np else a.get()


def _start(xp, size, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.uniform(0, 1, size).astype(dtype))


def losses_kept_read_at_the_end(xp, n):
    """``losses[i] = (x * x).mean()`` every step, nothing read until the loop is over."""
    x, losses = _start(xp, 512, 1), xp.zeros(n, dtype=xp.float32)
    for i in range(n):
        x = x * 0.99 + 0.005
        losses[i] = (x * x).mean()
    return [host(xp, losses), host(xp, x)]


def trajectory_rows(xp, n):
    """A state recorded as a row each step (``traj[i] = x``), its first entry read."""
    x, traj = _start(xp, 256, 2, np.float64), xp.zeros((n, 256))
    out = []
    for i in range(n):
        x = 0.5 * (x + xp.roll(x, 1))
        traj[i] = x
        out.append(fbits(float(x[0])))
    return out + [host(xp, traj[::5])]


def history_columns(xp, n):
    """A column written each step (``hist[:, i] = x``: strided in the array)."""
    x, hist = _start(xp, 64, 3), xp.zeros((64, n), dtype=xp.float32)
    out = []
    for i in range(n):
        x = xp.sin(x) + 0.1
        hist[:, i] = x
        out.append(fbits(float(x[3])))
    return out + [host(xp, hist)]


def ring_buffer_by_modulo(xp, n):
    """The last eight states in a ring (``buf[i % 8] = x``), the ring's mean read."""
    x, buf = _start(xp, 128, 4, np.float64), xp.zeros((8, 128))
    out = []
    for i in range(n):
        x = x * 0.9 + 0.1 * xp.cos(x)
        buf[i % 8] = x
        out.append(fbits(float(buf.mean())))
    return out + [host(xp, buf)]


def slot_added_to_in_place(xp, n):
    """An entry that reads what it writes (``acc[i % 4] += x.sum()``)."""
    x, acc = _start(xp, 200, 5, np.float64), xp.zeros(4)
    out = []
    for i in range(n):
        x = xp.abs(x - 0.3)
        acc[i % 4] += x.sum()
        out.append(fbits(float(x.max())))
    return out + [host(xp, acc)]


def flags_from_a_comparison(xp, n):
    """A boolean flag per step from a 0-d comparison (``done[i] = loss < 0.2``)."""
    x, done = _start(xp, 300, 6), xp.zeros(n, dtype=bool)
    for i in range(n):
        x = x * 0.97
        done[i] = (x * x).mean() < 0.2
    return [host(xp, done), host(xp, x)]


def window_written_by_a_moving_slice(xp, n):
    """Four entries written at bounds that move (``y[i:i + 4] = x[:4]``)."""
    x, y = _start(xp, 16, 7), xp.zeros(n + 4, dtype=xp.float32)
    out = []
    for i in range(n):
        x = x[::-1] * 1.01
        y[i:i + 4] = x[:4]
        out.append(fbits(float(y[i])))
    return out + [host(xp, y)]


def large_history_rows(xp, n):
    """A 64 K-float row a step into a 15 MB history (each replay's buffer of it costs more
    to copy than the step), its last entry read."""
    x, traj = _start(xp, 1 << 16, 8), xp.zeros((n, 1 << 16), dtype=xp.float32)
    out = []
    for i in range(n):
        x = x * 0.999 + 0.0005
        traj[i] = x
        out.append(fbits(float(x[-1])))
    return out + [host(xp, traj[:, ::4096])]


def numpy_int_index(xp, n):
    """The index a NumPy integer (a loop over ``np.arange``)."""
    x, rec = _start(xp, 100, 9, np.float64), xp.zeros(n)
    out = []
    for i in np.arange(n):
        x = xp.tanh(x + 0.05)
        rec[i] = x.sum()
        out.append(fbits(float(x[i % 100])))
    return out + [host(xp, rec)]


def filled_from_the_end(xp, n):
    """A negative index that moves (``rec[-1 - i] = ...``)."""
    x, rec = _start(xp, 64, 10), xp.zeros(n, dtype=xp.float32)
    out = []
    for i in range(n):
        x = x * x * 0.5 + 0.25
        rec[-1 - i] = x.max()
        out.append(fbits(float(x[0])))
    return out + [host(xp, rec)]


def entry_reads_the_one_before(xp, n):
    """Each entry from the one before it (``rec[i] = rec[i - 1] * 0.9 + x.mean()``), the
    difference read."""
    x, rec = _start(xp, 50, 11, np.float64), xp.zeros(n + 1)
    out = []
    for i in range(1, n + 1):
        x = xp.sqrt(x + 0.01)
        rec[i] = rec[i - 1] * 0.9 + x.mean()
        out.append(fbits(float(rec[i] - rec[i - 1])))
    return out + [host(xp, rec)]


def python_scalar_assigned(xp, n):
    """A Python float assigned at a moving index (``mask[i] = 1.0``) beside the step."""
    x, mask = _start(xp, 80, 12), xp.zeros(n, dtype=xp.float32)
    out = []
    for i in range(n):
        x = xp.maximum(x - 0.01, 0.0)
        mask[i] = 1.0
        out.append(fbits(float((x * mask[:80].sum()).sum())))
    return out + [host(xp, mask)]


#: name: (function, iterations, also compared with NumPy)
PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, numpy_too) for f, iters, numpy_too in [
        (losses_kept_read_at_the_end, 60, False),   # (mean: CuPy's reduction order)
        (trajectory_rows, 60, True),
        (history_columns, 60, True),
        (ring_buffer_by_modulo, 60, False),
        (slot_added_to_in_place, 60, False),
        (flags_from_a_comparison, 60, False),
        (window_written_by_a_moving_slice, 60, True),
        (large_history_rows, 60, True),
        (numpy_int_index, 60, False),
        (filled_from_the_end, 60, True),
        (entry_reads_the_one_before, 60, False),
        (python_scalar_assigned, 60, False),
    ]}
