"""A session handed from one worker to another: *parked* by the worker that served it,
*adopted* by the next (issue 52: a move to another device, a drain, a pool's restart).

Why a hand-over and not a device switch inside one worker: a worker's CUDA context, its
device's memory pool, its arbiter lease and its same-host socket all belong to one device,
and a pool that restarts has no worker left. So the session's state goes where any worker
of the host (or the next pool) can read it: its swap directory. What moves:

- every array, under its handle: swapped out to the directory's file tier
  (worker/swap.py's ``swap_out`` with no host memory; a session already swapped keeps its
  file, and its host-memory part, which dies with this process, is written beside it);
- the held stretches' records (a client's in-flight replays name them; their graphs are
  captured again on the new device, as after any swap);
- the number of the last batch this worker ran, so that the client resends only what it
  did not (kernelproxy/session.py, ``_relink``).

What does not: the session's other remote objects (random generators, FFT plans, events,
sparse matrices, a captured CUDA graph). A session holding one is not moved, and is told
why (:func:`why_not_movable`). CuPy's global random generator starts afresh in the new
process, seeded as CuPy seeds a new process.

The manifest is msgpack (never pickle: the next worker trusts only what it can check) in a
file created 0600 beside the arrays' files; the adopting worker turns it back into a
swapped session (:func:`adopt`), so its arrays come back at its first batch, through the
swap-in path every swapped session takes, with its notices and errors.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from ..devices.host_bytes import HostBytes
from .swap import SwappedArrays, _Placed, swap_out

__all__ = ["why_not_movable", "park", "adopt", "discard", "files_of", "MANIFEST_VERSION"]

MANIFEST_VERSION = 1


def why_not_movable(swap: Any) -> str | None:
    """Why this worker's session cannot be handed over, or None (it can)."""
    why = swap.kept_in_place()
    if why is not None:
        return why
    objects = swap.table.objects
    if objects:
        kinds = sorted({type(o).__name__ for o in objects.values()})
        return (f"it holds {len(objects)} remote object(s) ({', '.join(kinds[:4])}) that a move "
                "cannot carry yet; arrays alone move")
    return None


def _private(path: Path, data: bytes) -> None:
    """Write *data* to a new file at *path*, 0600, never over an existing one."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def park(swap: Any, replay: Any, directory: Path, batch: int,
         state: dict | None = None) -> tuple[Path, int]:
    """Write the session out for another worker: its arrays (to *directory*'s file tier),
    held stretches (*replay*'s: worker/stretch_replay.py) and *batch* (the last batch run). The manifest's path and the bytes
    written. Raises (nothing lost: the arrays stay here) where it cannot."""
    why = why_not_movable(swap)
    if why is not None:
        raise RuntimeError(f"the session cannot move: {why}")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    swapped = swap.swapped
    if swapped is None:
        swap.device.synchronize()
        swapped = swap_out(swap.table, swap.device, directory, f"{swap.name}-park", host_room=0)
        swap.swapped = swapped   # (the process ends: discard() must not lose the files)
    host_path = None
    if swapped is not None and swapped.host is not None:   # (dies with this process)
        host_path = directory / f"{swap.name}-park-host"
        _private(host_path, memoryview(swapped.host.array).cast("B"))
    manifest = {
        "v": MANIFEST_VERSION, "batch": int(batch), "state": dict(state or {}),
        "file": str(swapped.path) if swapped is not None and swapped.path else None,
        "host_file": str(host_path) if host_path else None,
        "sizes": list(swapped.sizes) if swapped else [],
        "in_host": list(swapped.in_host) if swapped else [],
        "handles": [[hid, p.block, p.offset, list(p.shape), p.dtype.str, list(p.strides)]
                    for hid, p in (swapped.handles.items() if swapped else ())],
        "stretches": replay.export_held(),
    }
    path = directory / f"{swap.name}-park.manifest"
    _private(path, msgpack.packb(manifest, use_bin_type=True))
    if swapped is not None:   # the files are the next worker's now: this one ends without them
        if swapped.host is not None:
            swapped.host.release()
        swap.swapped = None
        swap.table.swapped = None
    return path, swapped.nbytes if swapped is not None else 0


def _checked(raw: Any) -> dict:
    """The manifest's fields, or ValueError: written by a worker of this pool, but read as
    any input is."""
    if not isinstance(raw, dict) or raw.get("v") != MANIFEST_VERSION:
        raise ValueError("not a session manifest of this version")
    sizes, in_host, handles = raw.get("sizes"), raw.get("in_host"), raw.get("handles")
    if (type(sizes) is not list or type(in_host) is not list or len(sizes) != len(in_host)
            or any(type(s) is not int or s <= 0 for s in sizes)
            or any(type(h) is not bool for h in in_host) or type(handles) is not list):
        raise ValueError("a session manifest with malformed allocations")
    for path in (raw.get("file"), raw.get("host_file")):
        if path is not None and not isinstance(path, str):
            raise ValueError("a session manifest with a malformed file name")
    return raw


def _read(path: Any) -> dict:
    """The manifest at *path*, checked (OSError, ValueError where it does not read)."""
    return _checked(msgpack.unpackb(Path(path).read_bytes(), raw=False, strict_map_key=False))


def adopt(path: Path, swap: Any, replay: Any) -> tuple[int, int, dict]:
    """Take over the session parked at *path*: its arrays become this worker's swapped
    session (back at the first batch), its held stretches held here. Returns the last batch
    the parked worker ran, the bytes adopted and the executor's state it had (an error the
    client has not yet acknowledged, the batches it cancelled: *poisoned_at*, *cancel_upto*)."""
    raw = _read(path)
    sizes, in_host = raw["sizes"], raw["in_host"]
    handles: dict[int, _Placed] = {}
    for entry in raw["handles"]:
        hid, block, offset, shape, dtype, strides = entry
        if type(hid) is not int or type(block) is not int or not -1 <= block < len(sizes):
            raise ValueError("a session manifest with a malformed handle")
        handles[hid] = _Placed(block, int(offset), tuple(int(n) for n in shape), np.dtype(dtype),
                               tuple(int(n) for n in strides))
    host = None
    if raw.get("host_file"):
        host_path = Path(raw["host_file"])
        host = HostBytes(np.fromfile(host_path, dtype=np.uint8))
        host_path.unlink(missing_ok=True)
    if handles:
        swap.swapped = SwappedArrays(Path(raw["file"]) if raw.get("file") else None, sizes,
                                     in_host, host, handles, sum(sizes),
                                     host.nbytes if host is not None else 0, 0.0)
        swap.table.swapped = handles
    for entry in raw.get("stretches") or ():
        if type(entry) is list and len(entry) == 3:
            replay.adopt_held(*entry)
    Path(path).unlink(missing_ok=True)
    state = raw.get("state") if isinstance(raw.get("state"), dict) else {}
    return int(raw.get("batch") or 0), sum(sizes), state


def files_of(path: Any) -> set[str]:
    """The files a parked session's manifest at *path* names, with the manifest itself (a
    manifest that does not read names none but itself)."""
    try:
        raw = _read(path)
    except (OSError, ValueError):
        raw = {}
    return {str(name) for name in (raw.get("file"), raw.get("host_file"), str(path)) if name}


def discard(path: Any) -> None:
    """A parked session that nobody adopts (it ended, the pool gave up on it): its files go."""
    for name in files_of(path):
        Path(name).unlink(missing_ok=True)
