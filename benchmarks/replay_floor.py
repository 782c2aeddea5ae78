"""How fast could a worker written in plain Python replay a held 20-op loop? The floor.

    python benchmarks/replay_floor.py [--iterations 2000] [--rounds 3] [--json out.json]

Issue 50 asks a replayed stretch to cost its graph launch plus <= 20 us of the worker's own
time, and the 20-op loop of ``held_loops.py`` (chain20) <= 0.5x local eager. Before writing
a compiled path (docs/stretch-replay.md, "What reaching issue 50's targets takes"), this
measures what the shortest *Python* worker can do, with none of the pool's machinery: a
second process serves one captured chain20 (``program_bodies.chain20_body`` and the ``x.sum()`` a
loop reads, one CUDA graph; on a machine without a GPU, the ops run eagerly on NumPy) over
a Unix socket with the session link's framing (protocol/framing.py) and msgpack. Each
iteration the client sends [input handles, parameters, result handle, frees] and waits for
the sum; the server, per message:

The parameters' block is written each time though the captured body uses Python floats
baked in at capture: it stands for the write a replay makes, at its cost.

* ``copy``: the inputs copied into the graph's buffers, the 20 parameters written (one
  host-to-device copy of a block), the graph launched, the carried result copied out into a
  fresh array given the new handle, the sum read (4 bytes), the reply sent -- what
  ``graph_replay._replay`` does;
* ``pingpong``: two graphs, each reading the buffer the other writes: the result handle
  is given the graph's own output buffer, no copy in or out (the floor of floors: a result handed out is overwritten two
  iterations later, which only a client that has freed it can allow).

Sides in one run: ``local`` (CuPy eager in the client process), ``local_graph`` (the body
captured once, launched each iteration), each server mode, and the raw round trip of a
small message over the same socket (``raw``). The server also times its own part of each
message (from the message read to the reply written, the wait for the device apart),
reported as ``server_us`` / ``server_wait_us``. Compare with ``held_loops.py``'s ``ipc``
side and ``worker_phases.py`` from the same host.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

import msgpack
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from gpu_backend.protocol.framing import MessageReader, send_all  # noqa: E402
from json_out import emit  # noqa: E402
from program_bodies import chain20_body, chain20_inputs  # noqa: E402

N = 1024
#: the 20 Python floats of chain20_body, as a replay sends its parameters
PARAMS = [1.01, 0.5, 0.75, 1.0, 0.9, 0.25, 1.0, 0.5, 0.1, 2.0,
          1.01, 0.5, 0.75, 1.0, 0.9, 0.25, 1.0, 0.5, 0.1, 2.0]


def _cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


# ---------------------------------------------------------------- the server
class _Server:
    """One captured chain20 served from a handle table (see the module's doc)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.cp = cp = _cupy()
        self.xp = cp if cp is not None else np
        x, y = chain20_inputs(self.xp, N)
        self.table = {1: x, 2: y}
        if cp is None:
            return
        rt = cp.cuda.runtime
        self.rt = rt
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.pinned = cp.cuda.alloc_pinned_memory(4)
        self.read_host = np.frombuffer(self.pinned, np.float32, 1)
        self.phost = np.empty(len(PARAMS), np.float64)
        with self.stream:
            self.pblock = cp.empty(len(PARAMS), np.float64)
            self.bx, self.by = x.copy(), y.copy()
            self.graphs = []
            if mode == "pingpong":
                self.other = cp.empty_like(x)
                for src, dst in ((self.bx, self.other), (self.other, self.bx)):
                    self.graphs.append(self._capture(src, dst))
            else:
                self.out = cp.empty_like(x)
                self.graphs.append(self._capture(self.bx, self.out))
            self.stream.synchronize()
        self.turn = 0

    def _capture(self, src, dst):
        cp, stream = self.cp, self.stream
        stream.begin_capture()
        result = chain20_body(src, self.by)
        dst[...] = result
        total = result.sum()
        graph = stream.end_capture()
        return graph, dst, total

    def handle(self, msg: list) -> float:
        (hx, hy), params, new, frees = msg
        cp = self.cp
        if cp is None:   # NumPy: the ops themselves
            x = chain20_body(self.table[hx], self.table[hy])
            self.table[new] = x
            for h in frees:
                self.table.pop(h, None)
            return float(x.sum())
        rt, sp = self.rt, self.stream.ptr
        self.phost[:] = params
        rt.memcpyAsync(self.pblock.data.ptr, self.phost.ctypes.data, self.phost.nbytes,
                       rt.memcpyHostToDevice, sp)
        if self.mode == "pingpong":
            graph, dst, total = self.graphs[self.turn]
            self.turn ^= 1
            self.table[hx], self.table[hy]   # (looked up as a replay would, not copied)
            graph.launch(self.stream)
            self.table[new] = dst
        else:
            x, y = self.table[hx], self.table[hy]
            rt.memcpyAsync(self.bx.data.ptr, x.data.ptr, x.nbytes, rt.memcpyDeviceToDevice, sp)
            rt.memcpyAsync(self.by.data.ptr, y.data.ptr, y.nbytes, rt.memcpyDeviceToDevice, sp)
            graph, dst, total = self.graphs[0]
            graph.launch(self.stream)
            with self.stream:
                made = cp.empty_like(dst)
            rt.memcpyAsync(made.data.ptr, dst.data.ptr, dst.nbytes, rt.memcpyDeviceToDevice, sp)
            self.table[new] = made
        for h in frees:
            self.table.pop(h, None)
        rt.memcpyAsync(self.read_host.ctypes.data, total.data.ptr, 4, rt.memcpyDeviceToHost, sp)
        t = time.perf_counter()
        self.stream.synchronize()
        self.waited += time.perf_counter() - t
        return float(self.read_host[0])

    waited = 0.0


def serve(where: str, mode: str) -> None:
    server = _Server(mode)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(where)
    listener.listen(1)
    print("ready", flush=True)
    conn, _ = listener.accept()
    reader = MessageReader(conn)
    own, waits = [], []
    packb, unpackb = msgpack.packb, msgpack.unpackb
    while True:
        frames = reader.read_message()
        t0 = time.perf_counter()
        msg = unpackb(frames[0].buffer)
        if msg == "stop":
            send_all(conn, [packb([statistics.median(own) * 1e6 if own else 0.0,
                                   statistics.median(waits) * 1e6 if waits else 0.0])])
            break
        if msg == "ping":
            send_all(conn, [b"ok"])
            continue
        server.waited = 0.0
        value = server.handle(msg)
        send_all(conn, [packb(value)])
        spent = time.perf_counter() - t0
        own.append(spent - server.waited)
        waits.append(server.waited)


# ---------------------------------------------------------------- the client
def _connect(mode: str):
    where = os.path.join(tempfile.mkdtemp(prefix="gpuwb-floor-"), "s")
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", where, mode],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(where)
    return child, sock, MessageReader(sock)


def remote_side(mode: str, iterations: int, rounds: int) -> dict:
    child, sock, reader = _connect(mode)
    packb, unpackb = msgpack.packb, msgpack.unpackb
    handle = [1, 3]   # (x's handle, the next free one)
    total = 0.0

    def step():
        nonlocal total
        hx, new = handle
        send_all(sock, [packb([[hx, 2], PARAMS, new, [hx] if hx != 1 else []])])
        total += unpackb(reader.read_message()[0].buffer)
        handle[:] = [new, new + 1]

    per_round = []
    for _ in range(50):
        step()
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iterations):
            step()
        per_round.append((time.perf_counter() - t0) / iterations * 1e6)
    raw = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        send_all(sock, [packb("ping")])
        reader.read_message()
        raw.append((time.perf_counter() - t0) * 1e6)
    send_all(sock, [packb("stop")])
    own, wait = unpackb(reader.read_message()[0].buffer)
    sock.close()
    child.wait(30)
    return {"per_iteration_us": round(statistics.median(per_round), 1),
            "server_us": round(own, 1), "server_wait_us": round(wait, 1),
            "raw_round_trip_us": round(statistics.median(raw), 1)}


def local_sides(iterations: int, rounds: int) -> dict:
    cp = _cupy()
    xp = cp if cp is not None else np
    out = {}
    x0, y = chain20_inputs(xp, N)

    def timed(step):
        for _ in range(50):
            step()
        rounds_us = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(iterations):
                step()
            rounds_us.append((time.perf_counter() - t0) / iterations * 1e6)
        return round(statistics.median(rounds_us), 1)

    state = {"x": x0.copy()}

    def eager():
        state["x"] = chain20_body(state["x"], y)
        float(state["x"].sum())

    out["local"] = {"per_iteration_us": timed(eager)}
    if cp is not None:
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            buf = x0.copy()
            stream.synchronize()
            stream.begin_capture()
            r = chain20_body(buf, y)
            buf[...] = r
            total = r.sum()
            graph = stream.end_capture()

            def captured():
                graph.launch(stream)
                float(total)

            out["local_graph"] = {"per_iteration_us": timed(captured)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--serve", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(*args.serve)
        return 0
    cp = _cupy()
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode() if cp else "numpy",
              "command": " ".join(["python", "benchmarks/replay_floor.py", *(argv or sys.argv[1:])]),
              "sides": {}}
    result["sides"].update(local_sides(args.iterations, args.rounds))
    for mode in ("copy", "pingpong") if cp is not None else ("copy",):
        result["sides"][mode] = remote_side(mode, args.iterations, args.rounds)
    local = result["sides"]["local"]["per_iteration_us"]
    print(f"{'side':12s} {'iter us':>8s} {'vs local':>8s} {'server':>7s} {'wait':>6s} {'raw rt':>7s}")
    for name, side in result["sides"].items():
        side["vs_local"] = round(side["per_iteration_us"] / local, 3)
        print(f"{name:12s} {side['per_iteration_us']:8.1f} {side['vs_local']:8.3f} "
              f"{side.get('server_us', float('nan')):7.1f} {side.get('server_wait_us', float('nan')):6.1f} "
              f"{side.get('raw_round_trip_us', float('nan')):7.1f}")
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
