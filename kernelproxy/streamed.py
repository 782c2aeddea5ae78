"""Large transfers as chunk messages: an upload sent chunk by chunk so that the worker's
copy to the GPU overlaps the network, and a download received straight into its final
array (the chunk protocol is docs/protocol.md's). Called by the session holding its lock."""

from __future__ import annotations

from typing import Any

import numpy as np
import zmq

from gpu_backend.protocol import api, codec
from gpu_backend.protocol import messages as m

__all__ = ["send_streamed", "receive_streamed"]


def send_streamed(session: Any, data: np.ndarray, out: int) -> int:
    """Send a large upload as chunk messages, so the GPU copy overlaps the network."""
    flat = data.reshape(-1).view(np.uint8)
    step = session.stream_chunk_bytes
    chunks = -(-flat.size // step)
    seq = session.submit(m.KIND_UPLOAD, api.ARRAY, out, codec.dtype_spec(data.dtype), None,
                         [list(data.shape), chunks], label="upload")
    session.flush(drain=False)
    sock = session.sock
    tracker = None
    report = session.progress("upload", flat.size) if session.progress is not None else None
    try:
        for i in range(chunks):
            sock.send(codec.packb({"k": session.key, "u": seq, "i": i}), zmq.SNDMORE)
            tracker = sock.send(flat[i * step:(i + 1) * step], copy=False, track=True)
            if report is not None:   # (sends block once ZeroMQ's queue is full)
                report.update(min((i + 1) * step, flat.size))
        if tracker is not None:
            tracker.wait()  # ZeroMQ sends in order: once the last chunk is out, all are
    finally:
        if report is not None:
            report.close()
    return seq


def receive_streamed(session: Any, dtype: np.dtype, shape: list, chunks: int) -> np.ndarray:
    """Receive a streamed download straight into its final array, chunk by chunk."""
    out = np.empty(shape, dtype)
    view = memoryview(out.reshape(-1).view(np.uint8))
    offset = 0
    report = session.progress("download", out.nbytes) if session.progress is not None else None
    try:
        for _ in range(chunks):
            while not session.sock.poll(1000):
                if session.heartbeat.lost:
                    session._lose(session.heartbeat.lost)
            offset += session.sock.recv_into(view[offset:])
            if report is not None:
                report.update(offset)
    finally:
        if report is not None:
            report.close()
    if offset != out.nbytes:
        session._lose(f"a download came with {offset} of its {out.nbytes} bytes")
    return out
