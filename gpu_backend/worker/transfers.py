"""An upload op's data into a new device array, and a download op's array out to the client.

Functions of the executor, as ``run_object_call`` and ``run_cuda_call`` are, so that
executor.py stays the op loop. An upload's data comes as the batch's next payload frame, or
streamed chunk by chunk (``executor.receive_chunk``); a download goes back as a frame after
the reply, or streamed after it (``executor.streams``, ``Executor.take_streams``).
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np

from ..protocol import codec
from ..protocol.errors import ProtocolError
from .batch_results import BatchResults

__all__ = ["run_upload", "run_download", "frame_array", "check_prefetch", "prefetch_downloads"]

#: Arrays a replay's header ``G`` may name at most (the client asks for 8 at most:
#: kernelproxy/trailing_downloads.py)
PREFETCH_MOST = 16


def frame_array(dt: np.dtype, shape: tuple, frame: Any) -> np.ndarray:
    """The host array an upload's *frame* holds, of dtype *dt* and *shape* (a view of the
    frame); a ProtocolError where the frame's size is another."""
    buffer = frame.buffer if hasattr(frame, "buffer") else memoryview(frame)
    nbytes = math.prod(shape) * dt.itemsize   # (exact: np.prod(dtype=int64) wraps around)
    if buffer.nbytes != nbytes:
        raise ProtocolError(f"upload data has {buffer.nbytes} bytes, its shape and dtype need {nbytes}")
    return codec.array_from_buffer(buffer, dt, shape)


def run_upload(executor: Any, seq: Any, dtype: Any, args: list, payload: Iterator,
               make: Any = None) -> Any:
    """Upload op *seq*'s array (*dtype*, shape and chunk count in *args*), made on the device
    from its frame in *payload* (by *make(host)* where given, else the device's
    ``from_host``), or from its streamed chunks; checked against the session's memory
    before it is received."""
    device = executor.device
    device.check_transfer("H2D")   # (a client's capture in progress: refused as CuPy does)
    dt = codec.check_dtype(dtype)
    shape = codec.check_shape(args[0] if args else None)
    count = math.prod(shape)  # exact: np.prod(dtype=int64) wraps around
    nbytes = count * dt.itemsize
    device.check_allocation("empty", [shape, dt], {})
    chunks = args[1] if len(args) > 1 else 0
    if type(chunks) is int and chunks > 0:
        receive_chunk = executor.receive_chunk
        if receive_chunk is None:
            raise ProtocolError("streamed uploads are not available here")
        executor.bytes_in += nbytes
        return device.from_chunks(dt, shape, nbytes, (receive_chunk(seq, i) for i in range(chunks)))
    try:
        frame = next(payload)
    except StopIteration:
        raise ProtocolError("an upload op came without its data frame") from None
    host = frame_array(dt, shape, frame)
    executor.bytes_in += nbytes
    return device.from_host(host) if make is None else make(host)


def run_download(executor: Any, seq: Any, target: Any, results: BatchResults,
                 owned: Any = None, whole: bool = False) -> None:
    """Download op *seq*: *target*'s entry in the reply, and its data as a frame after it, or
    streamed after the reply where the device sends it in chunks. *owned*: where given,
    ``owned(array)`` makes a device copy of *target* that nothing writes later — *target*
    is a held stretch's buffer (worker/graph_replay.py), which the next replay, run ahead
    after the reply, writes before a streamed download's chunks go; and a NumPy device's
    frame is the array itself, which goes after the reply too (zero-copy over tcp). *whole*:
    as one frame, never streamed (the caller has seen it is within the device's chunk size)."""
    device = executor.device
    if not device.is_array(target):
        raise ProtocolError("a download needs an array handle")
    device.check_transfer("D2H")   # (a client's capture in progress: refused as CuPy does)
    chunks = 0 if whole else device.download_chunks(target, executor.stream_from)
    if chunks and owned is not None:
        target = owned(target)
    executor.bytes_out += target.nbytes
    if chunks:  # sent after the reply, chunk by chunk (see Executor.take_streams)
        results.downloads.append([seq, codec.dtype_spec(target.dtype), list(target.shape), chunks])
        executor.streams.append(target)
        return
    host = device.to_host(target)
    if owned is not None and host is target:   # (the NumPy device's own array: its bytes now)
        host = host.copy()
    results.downloads.append([seq, codec.dtype_spec(host.dtype), list(host.shape)])
    # bfloat16 and structures go as bytes (NumPy exports no buffer of bfloat16)
    results.out_frames.append(host if host.dtype.kind != "V" else host.reshape(-1).view(np.uint8))


def check_prefetch(handles: Any) -> None:
    """A replay's header ``G`` is a list of at most PREFETCH_MOST positive handles: checked
    before the batch runs anything, so that a malformed one fails the batch whole."""
    if type(handles) is not list or len(handles) > PREFETCH_MOST \
            or any(type(h) is not int or h <= 0 for h in handles):
        raise ProtocolError(f"a replay's G lists at most {PREFETCH_MOST} handles of arrays "
                            "to download after it")


def prefetch_downloads(executor: Any, handles: list, results: BatchResults) -> int:
    """Header ``G``: the arrays the client expects to download right after this replay
    (kernelproxy/trailing_downloads.py), each downloaded now as a download op would be, its
    entry in the reply's ``d`` under the seq ``-handle``; how many went. Best effort, never
    an error of the batch's: an array the session does not hold (the client dropped it), one
    that would stream, and everything after one whose download fails (a client's capture
    under way, a device fault) are left out, and the client downloads those itself, meeting
    any error where the user asked."""
    table, device = executor.table, executor.device
    sent = 0
    for hid in dict.fromkeys(handles):
        target = table.arrays.get(hid)
        # (as one frame up to the device's chunk size, also where the client's staging ring
        # takes larger downloads from STAGED_DOWNLOAD_BYTES: the client asks for 1 MiB at most)
        if target is None or not device.is_array(target) or device.download_chunks(target):
            continue
        try:
            run_download(executor, -hid, target, results, whole=True)
        except Exception:   # (the client's own download of it meets this, and says so)
            break
        sent += 1
    return sent
