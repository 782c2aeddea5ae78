"""Large transfers as chunk messages: an upload sent chunk by chunk so that the worker's
copy to the GPU overlaps the network, and a download received straight into its final
array (the chunk protocol is docs/protocol.md's). Called by the session holding its lock."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu_backend.protocol import api, codec
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.staging import StagingRing

from .relink import LinkEnded, relink

__all__ = ["send_streamed", "receive_streamed"]


def send_streamed(session: Any, data: np.ndarray, out: int) -> int:
    """Send a large upload as chunk messages, so the GPU copy overlaps the network."""
    flat = data.reshape(-1).view(np.uint8)
    step = session.stream_chunk_bytes
    chunks = -(-flat.size // step)
    seq = session.submit(m.KIND_UPLOAD, api.ARRAY, out, codec.dtype_spec(data.dtype), None,
                         [list(data.shape), chunks], label="upload")
    session.flush(drain=False)
    # (its chunks follow it: after a move before its worker ran it, they go again, as frames,
    # from *flat*, the caller's bytes, which it keeps until the batch's reply: relink)
    session._streamed[session._batch] = (seq, flat, step)
    link = session.link
    tracker = None
    ring = session.staging
    report = session.progress("upload", flat.size) if session.progress is not None else None
    try:
        for i in range(chunks):
            part = flat[i * step:(i + 1) * step]
            if ring is not None:   # the bytes through shared memory, the message names the slot
                link.send([codec.packb(_into_slot(session, ring, part, {"k": session.key, "u": seq, "i": i}))])
            else:
                tracker = link.send([codec.packb({"k": session.key, "u": seq, "i": i}), part], track=True)[-1]
            if report is not None:   # (sends block once the link is full)
                report.update(min((i + 1) * step, flat.size))
        if tracker is not None:
            session.wait_sent([tracker])  # messages go in order: once the last is out, all are
    except LinkEnded as exc:   # (its worker moved mid-stream: the batch, and every chunk
        relink(session, str(exc))   # of it, go to the new one, or the session is lost)
    finally:
        if report is not None:
            report.close()
    return seq


def _into_slot(session: Any, ring: StagingRing, part: np.ndarray, header: dict) -> dict:
    """Copy an upload chunk into the ring's next slot once the worker is done with that
    slot's last chunk; *header* completed to name it."""
    chunk = ring.uploads_sent
    ring.wait_free(chunk, lambda: ring.uploads_done, lambda: _check_alive(session))
    slot = ring.slot_of(chunk)
    ring.slot(slot, part.size)[:] = memoryview(part)
    ring.uploads_sent = chunk + 1
    header.update(s=slot, g=chunk, n=part.size)
    return header


def _check_alive(session: Any) -> None:
    """While a chunk waits for a slot: a session lost is lost; one whose worker moved (its
    heartbeat says) stops waiting for the old worker, which will not take the slot: its
    upload follows (send_streamed, relink)."""
    if session.heartbeat.lost:
        session._lose(session.heartbeat.lost)
    if session.heartbeat.moves > session.moves:
        raise LinkEnded("the session's worker changed during a streamed upload")


def receive_streamed(session: Any, dtype: np.dtype, shape: list, chunks: int) -> np.ndarray:
    """Receive a streamed download straight into its final array, chunk by chunk."""
    out = np.empty(shape, dtype)
    view = memoryview(out.reshape(-1).view(np.uint8))
    offset = 0
    report = session.progress("download", out.nbytes) if session.progress is not None else None
    ring = session.staging
    try:
        for _ in range(chunks):
            while not session.link.poll(1000):
                _check_alive(session)
            if ring is not None:
                offset += _out_of_slot(session, ring, view[offset:])
            else:
                offset += session.link.recv_into(view[offset:])
            if report is not None:
                report.update(offset)
    finally:
        if report is not None:
            report.close()
    if offset != out.nbytes:
        session._lose(f"a download came with {offset} of its {out.nbytes} bytes")
    return out


def _out_of_slot(session: Any, ring: StagingRing, view: memoryview) -> int:
    """A staged download chunk: its message names the slot; copy it into *view* and count
    it done, so the worker may fill the slot again. Returns its length."""
    frames = session.link.recv()
    header = codec.unpackb(frames[0].bytes) if len(frames) == 1 else None
    chunk, slot, nbytes = (header.get("g"), header.get("s"), header.get("n")) \
        if isinstance(header, dict) else (None, None, None)
    if chunk != ring.downloads_sent or type(nbytes) is not int or nbytes > view.nbytes \
            or slot != ring.slot_of(chunk):
        session._lose(f"a download chunk out of order or too large ({header!r})")
    view[:nbytes] = ring.slot(slot, nbytes)
    ring.downloads_sent = chunk + 1
    ring.download_done(chunk)
    return nbytes
