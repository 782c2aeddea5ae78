"""The NumPy device's stand-ins for ``cupyx.scipy.signal._iir_utils``.

CuPy's ``apply_iir`` and ``apply_iir_sos`` are the block-parallel recursive filters under
``lfilter`` and ``sosfilt``; CuPy's own test suite calls them directly, so the pool
forwards them. Without a GPU the same recurrences run through SciPy's ``lfilter``, with
the initial conditions in CuPy's form: the last inputs and outputs *in time order*
(SciPy's ``lfiltic`` takes them newest first), converted to ``lfilter``'s state here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["apply_iir", "apply_iir_sos"]


def _lfilter_state(b: np.ndarray, a: np.ndarray, x_past: np.ndarray | None,
                   y_past: np.ndarray) -> np.ndarray:
    """``lfilter``'s transposed direct-form state from the past inputs and outputs (time
    order along the last axis; ``a[0] == 1``): ``z[m] = sum_{k>m} b[k] x[-(k-m)] - a[k]
    y[-(k-m)]``."""
    order = max(len(a), len(b)) - 1
    b = np.pad(b, (0, order + 1 - len(b)))
    a = np.pad(a, (0, order + 1 - len(a)))
    state = np.zeros(y_past.shape[:-1] + (order,), np.result_type(b, a, y_past))
    for m in range(order):
        for k in range(m + 1, order + 1):
            back = k - m
            if back <= y_past.shape[-1]:
                state[..., m] -= a[k] * y_past[..., -back]
            if x_past is not None and back <= x_past.shape[-1]:
                state[..., m] += b[k] * x_past[..., -back]
    return state


def apply_iir(x: Any, a: Any, axis: int = -1, zi: Any = None, dtype: Any = None,
              block_sz: int = 1024) -> np.ndarray:
    """``y[n] = x[n] + sum_k a[k] y[n-1-k]``; *zi* holds the ``len(a)`` outputs before
    ``x[0]``, oldest first (one set for every row, or one per row along *axis*)."""
    from scipy import signal

    x, a = np.asarray(x), np.asarray(a)
    dtype = np.dtype(dtype) if dtype is not None else np.result_type(x.dtype, a.dtype)
    a = a.astype(dtype)
    denominator = np.concatenate([np.ones(1, dtype), -a])
    moved = np.moveaxis(x.astype(dtype), axis, -1)
    if zi is None:
        out = signal.lfilter(np.ones(1, dtype), denominator, moved, axis=-1)
    else:
        zi = np.asarray(zi).astype(dtype)
        past = zi if zi.ndim == 1 else np.moveaxis(zi, axis, -1)
        state = np.broadcast_to(_lfilter_state(np.ones(1, dtype), denominator, None, past),
                                moved.shape[:-1] + (a.size,))
        out, _ = signal.lfilter(np.ones(1, dtype), denominator, moved, axis=-1, zi=state)
    return np.ascontiguousarray(np.moveaxis(out.astype(dtype, copy=False), -1, axis))


def apply_iir_sos(x: Any, sos: Any, axis: int = -1, zi: Any = None, dtype: Any = None,
                  block_sz: int = 1024, apply_fir: bool = True, out: Any = None) -> Any:
    """Second-order sections in cascade (``sos[s, 3] == 1``). *zi*, shaped
    ``(sections, ..., 4, ...)`` with the 4 at ``axis + 1``, holds per section the two
    inputs and the two outputs before ``x[0]``, oldest first; with *zi* the result is
    ``(y, zi_out)``, ``zi_out`` in the same form for the samples' end."""
    from scipy import signal

    x, sos = np.asarray(x), np.asarray(sos)
    dtype = np.dtype(dtype) if dtype is not None else np.result_type(x.dtype, sos.dtype)
    sos = sos.astype(dtype)
    y = np.moveaxis(x.astype(dtype), axis, -1)
    states = None if zi is None else np.asarray(zi).astype(dtype)
    if states is not None and states.ndim > 2:
        states = np.moveaxis(states, axis + 1, -1)
    zi_out = None if states is None else np.empty(states.shape, dtype)
    for s, section in enumerate(sos):
        b = section[:3] if apply_fir else np.ones(1, dtype)
        a = section[3:]
        if states is None:
            y = signal.lfilter(b, a, y, axis=-1)
            continue
        zi_out[s, ..., :2] = y[..., -2:]
        past = states[s]
        state = np.broadcast_to(_lfilter_state(b, a, past[..., :2], past[..., 2:]),
                                y.shape[:-1] + (2,))
        y, _ = signal.lfilter(b, a, y, axis=-1, zi=state)
        zi_out[s, ..., 2:] = y[..., -2:]
    result = np.ascontiguousarray(np.moveaxis(y.astype(dtype, copy=False), -1, axis))
    if out is not None:
        np.copyto(out, result.reshape(out.shape))
        result = out
    if zi_out is None:
        return result
    if zi_out.ndim > 2:
        zi_out = np.moveaxis(zi_out, -1, axis + 1)
    return result, np.ascontiguousarray(zi_out)
