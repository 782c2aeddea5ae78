"""The floor of each session transport: plain messages between two processes.

    bench_raw(nbytes, reps, "tcp" | "zmq-ipc" | "unix")
    bench_staging_floor(nbytes, reps)

The same measurements over pyzmq (a DEALER here, a ROUTER peer, as a session
and its worker: ``tcp`` or ``zmq-ipc``) and over a plain Unix socket with the
session link's framing (``unix``, what ``ipc://`` sessions use): a large
message each way (one message, and 8 MB messages), and the round trip of a
small one (the floor of any sync op), hot and after 10 ms idle. overhead.py
compares the proxy with these.

A same-host session's large transfers go through a shared-memory ring instead of
its socket (``gpu_backend.protocol.staging``): one copy on the client's side each
way, into a slot or out of one. ``bench_staging_floor`` is that copy alone, in one
process: the bytes into a mapped 4-slot ring 8 MB at a time, and out of it into a
fresh array, as a download lands in one.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import zmq

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
#: Both ends of a Unix link ask for this send buffer, as the session and its worker do.
UNIX_SEND_BUFFER = 4 << 20

_PEER = r"""
import socket, sys
sys.path.insert(0, sys.argv[3])
transport, where = sys.argv[1], sys.argv[2]
if transport == "unix":
    from gpu_backend.protocol.framing import MessageReader, send_all
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); listener.bind(where); listener.listen(1)
    print("unix://" + where, flush=True)
    conn, _ = listener.accept()
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(sys.argv[4]))
    reader = MessageReader(conn)   # as the worker reads: one buffer for the connection
    receive = lambda: reader.read_message()[0].buffer
    reply = lambda data: send_all(conn, [data])
else:
    import zmq
    s = zmq.Context().socket(zmq.ROUTER)
    if transport == "tcp":
        print("tcp://127.0.0.1:%d" % s.bind_to_random_port("tcp://127.0.0.1"), flush=True)
    else:
        s.bind("ipc://" + where); print("ipc://" + where, flush=True)
    s.setsockopt(zmq.ROUTER_MANDATORY, 1)
    ident = [b""]
    def receive():
        ident[0] = s.recv()
        return s.recv(copy=False).buffer
    reply = lambda data: s.send_multipart([ident[0], data], copy=False)
buffers, expect = {}, 0
while True:
    f = receive()
    if len(f) == 0:
        break
    text = bytes(f) if len(f) < 64 else b""
    if text.startswith(b"echo"):          # echo N [K]: send N bytes back, in K messages
        n, k = (int(v) for v in (text[4:].split() + [b"1"])[:2])
        if n not in buffers:
            buffers[n] = memoryview(bytearray(n))
        step = -(-n // k)
        for i in range(k):
            reply(buffers[n][i * step:(i + 1) * step])
    elif text.startswith(b"expect"):      # expect K: ack after the next K messages
        expect = int(text[6:])
    elif expect > 1:
        expect -= 1
    else:
        expect = 0
        reply(b"ok")
"""


class _ZmqEnd:
    def __init__(self, address: str) -> None:
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.connect(address)

    def send(self, data) -> None:
        self.sock.send(data, copy=False)

    def recv(self) -> None:
        self.sock.recv(copy=False)

    def recv_into(self, view) -> int:
        return self.sock.recv_into(view)

    def close(self) -> None:
        self.sock.close()
        self.ctx.term()


class _UnixEnd:
    def __init__(self, address: str) -> None:
        from gpu_backend.protocol import framing
        self.framing = framing
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, UNIX_SEND_BUFFER)
        self.sock.connect(address[len("unix://"):])
        self.reader = framing.MessageReader(self.sock)   # as a session reads

    def send(self, data) -> None:
        self.framing.send_all(self.sock, [data])

    def recv(self) -> None:
        self.reader.read_message()

    def recv_into(self, view) -> int:
        (length,) = self.reader.read_lengths()
        self.reader.read_exact(self.framing.byte_view(view)[:length])
        return length

    def close(self) -> None:
        self.sock.close()


def bench_raw(nbytes: int, reps: int, transport: str = "tcp", idle_reps: int = 300) -> dict:
    where = os.path.join(tempfile.mkdtemp(prefix="gpuwb-raw-"), "peer")
    kind = {"tcp": "tcp", "zmq-ipc": "ipc", "unix": "unix"}[transport]
    child = subprocess.Popen([sys.executable, "-c", _PEER, kind, where, ROOT, str(UNIX_SEND_BUFFER)],
                             stdout=subprocess.PIPE, text=True)
    address = child.stdout.readline().strip()
    end = _UnixEnd(address) if kind == "unix" else _ZmqEnd(address)
    try:
        payload = np.random.default_rng(1).random(nbytes // 8)
        into = np.empty(nbytes, np.uint8)
        send, recv = [], []
        for _ in range(reps + 1):
            t0 = time.perf_counter()
            end.send(payload)
            end.recv()
            send.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            end.send(f"echo{nbytes}".encode())
            end.recv_into(memoryview(into))
            recv.append(time.perf_counter() - t0)
        chunk = 8 << 20
        k = -(-nbytes // chunk)
        flat = payload.view(np.uint8)
        csend, crecv = [], []
        for _ in range(reps + 1):
            t0 = time.perf_counter()
            end.send(f"expect{k}".encode())
            for i in range(k):
                end.send(flat[i * chunk:(i + 1) * chunk])
            end.recv()
            csend.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            end.send(f"echo{nbytes} {k}".encode())
            view, offset = memoryview(into), 0
            for i in range(k):
                offset += end.recv_into(view[offset:])
            crecv.append(time.perf_counter() - t0)

        def round_trips(count: int, idle: float) -> list[float]:
            times = []
            for _ in range(count):
                if idle:
                    time.sleep(idle)
                t0 = time.perf_counter()
                end.send(b"x" * 100)
                end.recv()
                times.append(time.perf_counter() - t0)
            return sorted(times)

        hot = round_trips(2000, 0.0)[100:]
        idle = round_trips(idle_reps, 0.010)
        end.send(b"")
    finally:
        child.wait(10)
        end.close()
    single = {"send": nbytes / min(send[1:]) / 1e9, "recv": nbytes / min(recv[1:]) / 1e9}
    chunked = {"send": nbytes / min(csend[1:]) / 1e9, "recv": nbytes / min(crecv[1:]) / 1e9}
    # the reference is the better way of moving the bytes over this transport
    return {"transport": transport,
            "send_GBps": max(single["send"], chunked["send"]),
            "recv_GBps": max(single["recv"], chunked["recv"]),
            "one_message_GBps": single, "8MB_messages_GBps": chunked,
            "rtt_small_us": statistics.median(hot) * 1e6,
            "rtt_after_idle_us": idle[len(idle) // 2] * 1e6,
            "rtt_after_idle_p99_us": idle[int(len(idle) * 0.99)] * 1e6}


def bench_staging_floor(nbytes: int, reps: int, slot_bytes: int = 8 << 20) -> dict:
    """The host copies a staged transfer cannot avoid (see the module's docstring)."""
    from gpu_backend.protocol.staging import StagingRing, available
    if not available():
        return {}
    ring = StagingRing.create(slot_bytes)
    try:
        payload = np.random.default_rng(1).random(nbytes // 8).view(np.uint8)
        send, recv = [], []
        for _ in range(reps + 1):
            t0 = time.perf_counter()
            for i, offset in enumerate(range(0, nbytes, slot_bytes)):
                part = payload[offset:offset + slot_bytes]
                ring.slot(i % ring.slots, part.size)[:] = memoryview(part)
            send.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            into = np.empty(nbytes, np.uint8)
            view = memoryview(into)
            for i, offset in enumerate(range(0, nbytes, slot_bytes)):
                size = min(slot_bytes, nbytes - offset)
                view[offset:offset + size] = ring.slot(i % ring.slots, size)
            recv.append(time.perf_counter() - t0)
            del into, view
    finally:
        ring.close()
    return {"transport": "shared memory", "send_GBps": nbytes / min(send[1:]) / 1e9,
            "recv_GBps": nbytes / min(recv[1:]) / 1e9}
