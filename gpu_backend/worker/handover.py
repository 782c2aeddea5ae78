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

Between two workers of one host the arrays need not go through the directory: the old
worker *lends* its allocations (:func:`lend`: CUDA IPC on a GPU, devices/cupy_loans.py) and
waits; the new one copies them straight into its device's memory (:func:`adopt`), or, where
they do not fit there, into the directory's file tier itself (the session arrives swapped,
its first op bringing them back as after any swap); only then does the old worker free them
and end. A session swapped out already, or a device that cannot lend, parks as above.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from ..devices.host_bytes import HostBytes
from ..devices.swap_file_io import write_private
from ..protocol.errors import error_name
from .swap import (CHUNK, SwapFile, SwappedArrays, _Placed, placed_allocations, put_back,
                   swap_out, write_allocation)

__all__ = ["why_not_movable", "park", "lend", "end_loan", "serve_loan", "Loan", "adopt", "discard", "files_of", "MANIFEST_VERSION"]

MANIFEST_VERSION = 1
#: how long a worker that lent its session waits for the pool's word (``release``, or
#: ``unpark`` where the move failed) before it frees what it lent and ends
LOAN_WAIT = 300.0
#: pieces of a streamed session held in memory at most while they go to a file
QUEUED = 8


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


def park(swap: Any, replay: Any, directory: Path, batch: int,
         state: dict | None = None) -> tuple[Path, int]:
    """Write the session out for another worker: its arrays (to *directory*'s file tier),
    held stretches (*replay*'s: worker/stretch_replay.py) and *batch* (the last batch run). The manifest's path and the bytes
    written. Raises (nothing lost: the arrays stay here) where it cannot."""
    why = why_not_movable(swap)
    if why is not None:
        raise RuntimeError(f"the session cannot move: {why}")
    replay.drop_ahead()   # (a replay run ahead: its provisional results are no client's)
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
        write_private(host_path, swapped.host.array)
    path = _write_manifest(directory, swap.name, _manifest(
        batch, state, replay, swapped.sizes if swapped else [],
        swapped.in_host if swapped else [], swapped.handles if swapped else {},
        file=str(swapped.path) if swapped is not None and swapped.path else None,
        host_file=str(host_path) if host_path else None))
    if swapped is not None:   # the files are the next worker's now: this one ends without them
        if swapped.host is not None:
            swapped.host.release()
        swap.swapped = None
        swap.table.swapped = None
    return path, swapped.nbytes if swapped is not None else 0


def _manifest(batch: int, state: dict | None, replay: Any, sizes: list, in_host: list,
              handles: dict, **fields: Any) -> dict:
    """The manifest of a parked (or lent) session: what :func:`adopt` reads."""
    return {
        "v": MANIFEST_VERSION, "batch": int(batch), "state": dict(state or {}),
        "file": None, "host_file": None, **fields, "sizes": list(sizes), "in_host": list(in_host),
        "handles": [[hid, p.block, p.offset, list(p.shape), p.dtype.str, list(p.strides)]
                    for hid, p in handles.items()],
        "stretches": replay.export_held(),
    }


def _write_manifest(directory: Path, name: str, manifest: dict) -> Path:
    """*manifest* written 0600 in *directory*; its path."""
    path = directory / f"{name}-park.manifest"
    write_private(path, msgpack.packb(manifest, use_bin_type=True))
    return path


@dataclass
class Loan:
    """What a worker lent (:func:`lend`) and keeps until the adopter is done
    (:func:`end_loan`): the manifest (a file of the swap directory; or its bytes, which the
    pool hands to a worker of another host), the bytes lent, an array of each allocation,
    and what lends them: the device (CUDA IPC, within the host) or a
    :class:`~.loan_stream.LoanServer` (another host)."""
    manifest: Path | bytes
    nbytes: int
    firsts: list
    device_loan: list | None = None
    server: Any = None


def lend(swap: Any, replay: Any, directory: Path, batch: int, state: dict | None = None,
         server: Any = None) -> Loan | None:
    """Lend the session to the worker that takes it over: its allocations stay here, named
    in a manifest (:func:`park`'s, with the loan) through which the adopter copies them:
    within the host the device's loan (CUDA IPC), for another host *server*'s stream. This
    worker keeps them until the adopter is done (:func:`end_loan`). None where the session
    is swapped out or, within the host, holds no array or the device cannot lend: it parks
    instead."""
    why = why_not_movable(swap)
    if why is not None:
        raise RuntimeError(f"the session cannot move: {why}")
    replay.drop_ahead()   # (a replay run ahead: its provisional results are no client's)
    if swap.swapped is not None or (server is None and not swap.table.arrays):
        return None
    sizes, handles, firsts = placed_allocations(swap.table, swap.device)
    swap.device.synchronize()
    if server is not None:
        manifest = _manifest(batch, state, replay, sizes, [False] * len(sizes), handles,
                             stream={"secret": server.secret, "lanes": server.lane_count})
        return Loan(msgpack.packb(manifest, use_bin_type=True), sum(sizes), firsts, server=server)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    loan = swap.device.lend_allocations(firsts, directory, swap.name)
    if loan is None:
        return None
    try:
        path = _write_manifest(directory, swap.name, _manifest(
            batch, state, replay, sizes, [False] * len(sizes), handles, lent=loan))
    except BaseException:
        swap.device.end_loan(loan)
        raise
    return Loan(path, sum(sizes), firsts, device_loan=loan)


def serve_loan(swap: Any, loan: Loan) -> bool:
    """A message reached the loan's server: if it is the adopter's, stream it the arrays
    (worker/loan_stream.py). Whether it was."""
    return loan.server.serve_one(swap.device.allocation_bytes, loan.firsts, CHUNK)


def end_loan(swap: Any, loan: Loan) -> None:
    """The adopter is done with *loan* (or the move was given up): what was lent goes, and
    the manifest if it is still there (not adopted)."""
    if loan.device_loan is not None:
        swap.device.end_loan(loan.device_loan)
    if loan.server is not None:
        loan.server.close()
    if isinstance(loan.manifest, Path):
        loan.manifest.unlink(missing_ok=True)
    loan.firsts.clear()


def _arrive_swapped(swap: Any, directory: Path, sizes: list[int], handles: dict,
                    blocks: list, rest: Any = None) -> None:
    """The moved session does not fit this device: its allocations go to a file of
    *directory* instead (those in *blocks*, readable here, then, from *rest*, a
    :class:`~.loan_stream.LoanReader`, the ones not yet received), and it arrives swapped:
    its first op brings them back, making room as any swap-in does."""
    device = swap.device
    out = SwapFile(directory, f"{swap.name}-park", sum(sizes))
    try:
        at = 0
        for block in blocks:
            at = write_allocation(out, device.allocation_bytes(block, CHUNK), at)
        received = len(blocks)
        blocks.clear()
        device.release_cache()
        queued: deque = deque()   # (at most QUEUED pieces in memory: a session may be GBs)
        for size in sizes[received:]:
            for piece in range(0, size, CHUNK):
                buffer = np.empty(min(CHUNK, size - piece), np.uint8)
                rest.fill(buffer)
                queued.append(out.put(at, buffer))
                at += buffer.nbytes
                if len(queued) > QUEUED:
                    queued.popleft().result()
        out.finish()
    except BaseException:
        out.abort()
        raise
    swap.swapped = SwappedArrays(out.path, list(sizes), [False] * len(sizes), None, handles,
                                 sum(sizes), 0, 0.0)
    swap.table.swapped = handles


def _receive(reader: Any, sizes: list[int], handles: dict, swap: Any, directory: Path) -> None:
    """A session streamed from a worker of another host: each allocation copied into this
    device's memory as its bytes arrive; where they do not fit, into a file of *directory*."""
    device, table = swap.device, swap.table
    blocks: list = []
    try:
        for size in sizes:
            blocks.append(device.allocation_from(reader, size, CHUNK))
        put_back(handles, blocks, table, device)
        return
    except Exception as exc:   # (nothing half-adopted stays)
        for hid in handles:
            table.free(hid)
        if error_name(exc) != "OutOfMemoryError":
            raise
    _arrive_swapped(swap, directory, sizes, handles, blocks, reader)


def _borrow(loan: list, sizes: list[int], handles: dict, swap: Any, directory: Path) -> None:
    """Copy a lent session's allocations into this device's memory under their handles;
    where they do not fit, into a file of *directory* (the session arrives swapped, and its
    first op brings them back, making room as any swap-in does)."""
    device, table = swap.device, swap.table
    if any(type(name) is str and os.path.dirname(name) != str(directory) for name, _o, _s in loan):
        raise ValueError("a session manifest lending files outside its directory")
    with device.borrowed_allocations(loan) as lent:
        if any(int(b.nbytes) != n for b, n in zip(lent, sizes)):
            raise ValueError("a session manifest whose loan does not match its allocations")
        try:
            put_back(handles, [device.copy_allocation(block) for block in lent], table, device)
            return
        except Exception as exc:   # (nothing half-adopted stays: the lender still has it all)
            for hid in handles:
                table.free(hid)
            device.release_cache()
            if error_name(exc) != "OutOfMemoryError":
                raise
        _arrive_swapped(swap, directory, sizes, handles, list(lent))


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
    stream = raw.get("stream")
    if stream is not None and (type(stream) is not dict or type(stream.get("secret")) is not bytes
                               or len(stream["secret"]) != 32 or type(stream.get("lanes")) is not int
                               or not 1 <= stream["lanes"] <= 16):
        raise ValueError("a session manifest with a malformed stream")
    lent = raw.get("lent")
    if (stream is not None or lent is not None) and (raw.get("file") or raw.get("host_file")):
        raise ValueError("a lent session's manifest that names files")
    if lent is not None and (type(lent) is not list or len(lent) != len(sizes) or any(
            type(e) is not list or len(e) != 3 or type(e[0]) not in (bytes, str)
            or type(e[1]) is not int or e[1] < 0 or type(e[2]) is not int for e in lent)):
        raise ValueError("a session manifest with a malformed loan")
    return raw


def _read(path: Any) -> dict:
    """The manifest at *path*, checked (OSError, ValueError where it does not read)."""
    return _checked(msgpack.unpackb(Path(path).read_bytes(), raw=False, strict_map_key=False))


def adopt(source: Path | bytes, swap: Any, replay: Any, directory: Path | None = None,
          open_stream: Any = None) -> tuple[int, int, dict]:
    """Take over the session parked or lent in *source* (its manifest's path, or the bytes
    of a manifest sent from another host): its arrays become this worker's (copied from a
    loan at once; or swapped, back at the first batch), its held stretches held here.
    *directory*: where arrays that do not fit go (default: the manifest's); *open_stream*:
    a :class:`~.loan_stream.LoanReader` for a streamed loan's secret. Returns the last batch
    the old worker ran, the bytes adopted and the executor's state it had (an error the
    client has not yet acknowledged, the batches it cancelled: *poisoned_at*, *cancel_upto*)."""
    if isinstance(source, bytes):
        raw = _checked(msgpack.unpackb(source, raw=False, strict_map_key=False))
    else:
        raw = _read(source)
        directory = directory or Path(source).parent
        folder = Path(source).resolve().parent   # (its files: beside it, or in the swap
        for name in (raw.get("file"), raw.get("host_file")):   # directory it is a folder of)
            if name and Path(name).resolve().parent not in (folder, folder.parent):
                raise ValueError("a session manifest naming a file outside its swap directory")
    sizes, in_host = raw["sizes"], raw["in_host"]
    handles: dict[int, _Placed] = {}
    for entry in raw["handles"]:
        hid, block, offset, shape, dtype, strides = entry
        if type(hid) is not int or type(block) is not int or not -1 <= block < len(sizes):
            raise ValueError("a session manifest with a malformed handle")
        handles[hid] = _Placed(block, int(offset), tuple(int(n) for n in shape), np.dtype(dtype),
                               tuple(int(n) for n in strides))
    lent = raw.get("lent") is not None or raw.get("stream") is not None
    if raw.get("stream") is not None:
        if open_stream is None or directory is None:
            raise ValueError("a streamed session with no stream to read it from")
        reader = open_stream(raw["stream"]["secret"], raw["stream"]["lanes"])
        try:
            _receive(reader, sizes, handles, swap, directory)
        finally:
            reader.close()
    elif raw.get("lent") is not None:
        _borrow(raw["lent"], sizes, handles, swap, directory)
    host = None
    if raw.get("host_file"):
        host_path = Path(raw["host_file"])
        host = HostBytes(np.fromfile(host_path, dtype=np.uint8))
        host_path.unlink(missing_ok=True)
    if handles and not lent:
        swap.swapped = SwappedArrays(Path(raw["file"]) if raw.get("file") else None, sizes,
                                     in_host, host, handles, sum(sizes),
                                     host.nbytes if host is not None else 0, 0.0)
        swap.table.swapped = handles
    for entry in raw.get("stretches") or ():
        if type(entry) is list and len(entry) in (3, 4):
            replay.adopt_held(*entry)
    if not isinstance(source, bytes):
        Path(source).unlink(missing_ok=True)
    state = raw.get("state") if isinstance(raw.get("state"), dict) else {}
    return int(raw.get("batch") or 0), sum(sizes), state


def files_of(path: Any) -> set[str]:
    """The files a parked session's manifest at *path* names, with the manifest itself (a
    manifest that does not read names none but itself; one sent as bytes, none)."""
    if isinstance(path, bytes):
        return set()
    try:
        raw = _read(path)
    except (OSError, ValueError):
        raw = {}
    lent = [entry[0] for entry in raw.get("lent") or () if type(entry[0]) is str
            and os.path.dirname(entry[0]) == os.path.dirname(str(path))]   # (the NumPy device's)
    return {str(name) for name in (raw.get("file"), raw.get("host_file"), str(path), *lent)
            if name}


def discard(path: Any) -> None:
    """A parked session that nobody adopts (it ended, the pool gave up on it): its files go."""
    for name in files_of(path):
        Path(name).unlink(missing_ok=True)
