"""The unseen loops of the correctness campaign (benchmarks/unseen_loops.py) in one table,
and how two results are compared bit for bit: shared by the campaign and by
``unseen_speed.py``, which times the same loops against local CuPy. Importing this module
sets nothing in the environment (the campaign sets its run-ahead bounds itself)."""

from __future__ import annotations

import gc
import signal
import traceback
from typing import Any, Callable

import numpy as np

from unseen_loop_bodies import PROGRAMS as _FIRST, fbits
from unseen_loop_bodies_more import PROGRAMS as _MORE
from unseen_loop_bodies_draws import PROGRAMS as _DRAWS
from unseen_loop_bodies_graphed_draws import PROGRAMS as _GRAPHED
from unseen_loop_bodies_call_scalars import PROGRAMS as _CALL_SCALARS
from unseen_loop_bodies_moving_slices import PROGRAMS as _MOVING_SLICES
from unseen_loop_bodies_eager_rows import PROGRAMS as _EAGER_ROWS
from unseen_loop_bodies_uploads import PROGRAMS as _UPLOADS
from unseen_loop_bodies_several_results import PROGRAMS as _SEVERAL
from unseen_loop_bodies_user_kernels import PROGRAMS as _USER_KERNELS
from unseen_loop_bodies_records import PROGRAMS as _RECORDS
from unseen_loop_bodies_schedules import PROGRAMS as _SCHEDULES
from unseen_loop_bodies_several_held import PROGRAMS as _SEVERAL_HELD
from unseen_loop_bodies_kept_pieces import PROGRAMS as _KEPT_PIECES
_CAMPAIGNS = (_FIRST, _MORE, _DRAWS, _GRAPHED, _CALL_SCALARS, _MOVING_SLICES, _EAGER_ROWS,
              _UPLOADS, _SEVERAL, _USER_KERNELS, _RECORDS, _SCHEDULES, _SEVERAL_HELD,
              _KEPT_PIECES)
assert sum(map(len, _CAMPAIGNS)) == len(set().union(*_CAMPAIGNS)), "a name in two campaigns"
PROGRAMS = {name: entry for campaign in _CAMPAIGNS for name, entry in campaign.items()}
#: each program's campaign, by its bodies' module: what kind of loop it is
CAMPAIGN_OF = {name: module for module, campaign in zip(
    ("first", "more", "draws", "graphed_draws", "call_scalars", "moving_slices", "eager_rows",
     "uploads", "several_results", "user_kernels", "records", "schedules", "several_held",
     "kept_pieces"),
    _CAMPAIGNS) for name in campaign}


# ---------------------------------------------------------------------------------------
# running and comparing


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang("no answer within the time limit")


def flatten(value: Any, path: str = "") -> list:
    """(*path*, canonical item) pairs: arrays by dtype, shape and bytes; floats by bits."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        a = np.asarray(value)
        return [(path, ("array", a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes()))]
    if isinstance(value, (list, tuple)):
        items = [(path, (type(value).__name__, len(value)))]
        for i, v in enumerate(value):
            items += flatten(v, f"{path}[{i}]")
        return items
    if isinstance(value, float):
        return [(path, ("float", fbits(value)))]
    if isinstance(value, (bool, int, str, type(None))):
        return [(path, (type(value).__name__, value))]
    if isinstance(value, complex):
        return [(path, ("complex", fbits(value.real), fbits(value.imag)))]
    return [(path, ("other", type(value).__name__, repr(value)))]


def first_difference(a: Any, b: Any) -> str | None:
    """None where *a* and *b* are bitwise the same; else the first place they differ and
    how many items differ."""
    fa, fb = flatten(a), flatten(b)
    if fa == fb:
        return None
    la = [x for x in fa if x[1][0] not in ("list", "tuple")]   # (leaves: the first place
    lb = [x for x in fb if x[1][0] not in ("list", "tuple")]   # two results part)
    diffs = [(pa, ia, pb, ib) for (pa, ia), (pb, ib) in zip(la, lb) if pa != pb or ia != ib]
    if not diffs:
        return f"{len(fa)} items against {len(fb)}"
    pa, ia, pb, ib = diffs[0]
    where = pa or "top" if pa == pb else f"{pa or 'top'} / {pb or 'top'}"
    count = (f"{len(diffs)} of {len(fa)} items differ" if len(fa) == len(fb)
             else f"{len(fa)} items against {len(fb)}")
    return f"{count}, first at {where}: {_show(ia)} != {_show(ib)}{_element(ia, ib)}"


def _element(ia: tuple, ib: tuple) -> str:
    """For two arrays of one dtype and shape: their first differing element, with its
    bytes (a NaN's sign shows only there)."""
    if ia[0] != "array" or ib[0] != "array" or ia[1:3] != ib[1:3]:
        return ""
    a = np.frombuffer(ia[3], dtype=np.dtype(ia[1]))
    b = np.frombuffer(ib[3], dtype=np.dtype(ib[1]))
    size = a.dtype.itemsize
    for k in range(a.size):
        if ia[3][k * size:(k + 1) * size] != ib[3][k * size:(k + 1) * size]:
            return (f" (element {k}: {a[k]!r} bytes {ia[3][k * size:(k + 1) * size].hex()} != "
                    f"{b[k]!r} bytes {ib[3][k * size:(k + 1) * size].hex()})")
    return ""


def _show(item: tuple) -> str:
    if item[0] == "array":
        _, dt, shape, raw = item
        arr = np.frombuffer(raw, dtype=np.dtype(dt)).reshape(shape)
        with np.printoptions(threshold=8, edgeitems=3):
            return f"{dt}{list(shape)} {arr}"
    return repr(item)


def run_side(fn: Callable, n: int, xp: Any, timeout: float) -> tuple[str, Any]:
    """("ok", result) or ("raised" / "hang", text)."""
    gc.collect()
    gc.disable()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return "ok", fn(xp, n)
    except Hang as e:
        return "hang", str(e)
    except Exception as e:  # noqa: BLE001
        return "raised", f"{type(e).__name__}: {e}\n" + "".join(
            traceback.format_exception(e)[-6:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        gc.enable()
