"""What a sync through another process costs at the least: the proxy's hot sync taken apart.

    python benchmarks/sync_floor.py [--reps 2000] [--rounds 6] [--idle-reps 200] [--modes ...]
        [--client-spin S] [--server-spin S] [--cpus C,S] [--parts] [--json out.json]

Issue 8's target for the hot sync small op (``float((x + 1).sum())``) is the raw round
trip of the transport + the op's local time + 20 µs. This measures, side by side in one
run on one host, the same op through servers that do less and less than the pool's
worker, each a separate process on a Unix socket (the ``ipc://`` transport's kind of link):

* ``local``: the op in this process (local CuPy; NumPy where there is no GPU);
* ``raw``: a round trip that does nothing (the raw floor of overhead.py);
* ``ideal``: the server runs the op itself on its own array and answers the float: the
  least any design that runs CuPy's ops eagerly in another process can do;
* ``graph``: the server replays the op as stretch replay does, in the fewest calls: the
  input copied into the buffer a CUDA graph of the op reads, the graph launched, its sum
  copied into pinned host memory, the stream synchronised, the float answered (NumPy:
  the op, as ``ideal``);
* ``graph-ahead``: as ``graph``, run ahead as the pool's worker runs a held stretch ahead
  (worker/run_ahead.py): right after each reply the server replays the op again and reads
  its sum at once, and the next request is answered from it; the least a worker with
  graph replay and run ahead can do, the floor of the pool's hot sync's design (its
  "in server" column is the answer alone; the replay after it is the server's cycle too);
* ``generic``: the three ops travel as msgpack records naming a handle; the server
  decodes them, resolves the handles in a dict, looks the functions up by name, keeps
  the results by handle and answers the value (the least a generic op protocol does);
* ``generic+meta``: as ``generic``, and each array result's shape, strides, dtype and
  flags go back (the client needs them without asking), and two CUDA events mark the
  batch (device time, as the pacer measures it);
* ``executor``: the pool's own ``Executor`` (decode, handle table, pacer without a lease,
  reply) fed the batches a client sends for this op, in the server process;
* ``proxy``: a real session of an embedded pool (policy ``none``) over ``ipc://``.

Each server mode also runs as ``shm-<mode>``: the same requests through a shared-memory
mailbox that both ends spin on, with no system call on the way. It separates what the
socket's calls cost, and what they do to the code that runs after them, from the work
itself. The table's "in server" column is the server's own time per request (median).

Both ends spin a moment before sleeping, as the session and its worker do (on hosts of
four cores or more): ``--client-spin`` and ``--server-spin`` change that, ``--cpus C,S``
pins the two processes (a pinned server's CUDA threads share its one CPU: it says little
of a pool, whose workers are not pinned). Rounds alternate the order of the modes. Prints a
table, then JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import operator
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgpack  # noqa: E402

from floor_links import Mailbox, recv, send  # noqa: E402  (beside this file)
from json_out import emit  # noqa: E402  (beside this file)

_DOUBLE = struct.Struct("<d")
SPIN = (os.cpu_count() or 1) >= 4
SERVER_SPIN, CLIENT_SPIN = 200e-6, 1e-3
MODES = ("local", "raw", "ideal", "graph", "graph-ahead", "generic", "generic+meta", "executor",
         "proxy")
#: Each of raw, ideal, graph, graph-ahead, generic, generic+meta and executor also runs as ``shm-<mode>``: the same
#: requests through a shared-memory mailbox that both ends spin on (no system calls).


def array_module():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # no GPU here: NumPy stands in
        import numpy
        return numpy


# ------------------------------------------------------------------ the server
class Floors:
    """The server's side of every mode but ``local`` and ``proxy``."""

    def __init__(self) -> None:
        self.xp = array_module()
        xp = self.xp
        self.x = xp.arange(1024, dtype=xp.float32)
        self.arrays = {1: self.x}
        self.functions = {"add": operator.add, "sum": xp.ndarray.sum, "float": float}
        self.gpu = xp.__name__ == "cupy"
        self.times: dict[str, list] = {}
        self.events = None
        self.previous = None
        self._graph = None   # (graph, its sum, the stream, the input's buffer, the pinned read)
        self._ahead = None   # graph-ahead: the value replayed after the last reply
        # the pool's executor, with a table holding handle 1
        from gpu_backend.devices import open_device
        from gpu_backend.worker.executor import Executor
        from gpu_backend.worker.handles import HandleTable
        device = open_device("cuda:0" if self.gpu else "cpu")
        self.table = HandleTable(device)
        self.table.put(1, device.as_array(device.functions["arange"](1024, dtype="float32")))
        self.executor = Executor(device, self.table)
        from gpu_backend.worker.phases import PhaseClock
        self.executor.phases = self.clock = PhaseClock("")   # the executor's phases, as a worker's

    def handle(self, ext_code: int, data: bytes):
        if ext_code == 1:
            return self.arrays[int.from_bytes(data, "little", signed=True)]
        raise ValueError("unknown extension")

    def serve(self, mode: str, body: bytes, route: str = "") -> bytes:
        """The reply to one request, its time kept per route and mode (``"s"`` answers the
        medians)."""
        t0 = time.perf_counter()
        out = self._serve(mode, body)
        self.times.setdefault(route + mode, []).append(time.perf_counter() - t0)
        return out

    def _serve(self, mode: str, body: bytes) -> bytes:
        ahead, self._ahead = self._ahead, None   # (any other request drops a run ahead)
        if mode == "r":
            return b"ok"
        if mode == "i":
            return _DOUBLE.pack(float((self.x + 1).sum()))
        if mode == "G":
            return _DOUBLE.pack(self._replay())
        if mode == "A":
            self._after = self._run_ahead
            return _DOUBLE.pack(ahead if ahead is not None else self._replay())
        if mode == "s":   # the executor's phases so far, and each mode's time in serve (medians, us)
            served = {code: statistics.median(t) * 1e6 for code, t in self.times.items() if code != "s"}
            return json.dumps({**self.clock.summary(), "served_us": served}).encode()
        if mode == "e":
            ex, clock = self.executor, self.clock
            clock.start(slept=False)
            header, ops = ex.open_batch(body)
            clock.mark("opened")
            reply, _ = ex.run_batch(header, ops, [])
            clock.mark("run")
            out = ex.pack_reply(reply)
            clock.mark("encoded")
            self._after = ex.after_reply
            return out
        meta = mode == "m"
        if meta and self.gpu:
            start, end = self.xp.cuda.Event(), self.xp.cuda.Event()
            start.record()
        values, metas = [], []
        records = msgpack.Unpacker(ext_hook=self.handle, raw=False)
        records.feed(body)
        for name, out, args in records:   # decoded one by one: a record names the results before it
            result = self.functions[name](*args)
            if out is None:
                values.append(result)
            else:
                self.arrays[out] = result
                if meta:
                    f = result.flags
                    metas.append([out, result.shape, result.dtype.str, result.strides,
                                  f.c_contiguous | (f.f_contiguous << 1) | (f.owndata << 2)])
        for hid in list(self.arrays):
            if hid != 1:
                del self.arrays[hid]
        if meta and self.gpu:
            end.record()
            self._after = lambda: (end.synchronize(), self.xp.cuda.get_elapsed_time(start, end))
        return msgpack.packb([metas, values])

    def _replay(self) -> float:
        """The op through its CUDA graph: the input copied into the graph's buffer, the graph
        launched, its sum copied to pinned memory, the stream synchronised (NumPy: the op)."""
        if not self.gpu:
            return float((self.x + 1).sum())
        if self._graph is None:
            self._graph = self._capture()
        graph, total, stream, buf, host = self._graph
        rt = self.xp.cuda.runtime
        ptr = stream.ptr
        rt.memcpyAsync(buf.data.ptr, self.x.data.ptr, self.x.nbytes, rt.memcpyDeviceToDevice, ptr)
        graph.launch(stream)
        rt.memcpyAsync(host.ctypes.data, total.data.ptr, 4, rt.memcpyDeviceToHost, ptr)
        stream.synchronize()
        return float(host[0])

    def _capture(self) -> tuple:
        import numpy
        cp = self.xp
        stream = cp.cuda.Stream(non_blocking=True)
        pinned = cp.cuda.alloc_pinned_memory(4)
        host = numpy.frombuffer(pinned, numpy.float32, 1)
        with stream:
            buf = self.x.copy()
            (buf + 1).sum()   # (its kernels compiled before the capture)
            stream.synchronize()
            stream.begin_capture()
            total = (buf + 1).sum()
            graph = stream.end_capture()
        return graph, total, stream, buf, host

    def _run_ahead(self) -> None:
        self._ahead = self._replay()

    _after = None

    def after(self) -> None:
        if self._after is not None:
            self._after()
            self._after = None


def server(path: str, spin: float, cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    floors = Floors()
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    print("ready", flush=True)
    sock, _ = listener.accept()
    mailbox = None
    while True:
        try:
            message = recv(sock, spin)
        except EOFError:
            return
        if message == b"S":   # to the mailbox, until its "q"
            mailbox = mailbox or Mailbox(path + ".shm", create=False)
            send(sock, b"ok")
            while True:
                try:
                    message = mailbox.next_request(parent)
                except EOFError:
                    return
                if message == b"q":
                    mailbox.reply(b"ok")
                    break
                mailbox.reply(floors.serve(chr(message[0]), message[1:], "shm-"))
                _after_reply(floors)
            continue
        send(sock, floors.serve(chr(message[0]), message[1:]))
        _after_reply(floors)


def _after_reply(floors: Floors) -> None:
    floors.clock.mark("sent")
    floors.after()
    floors.clock.mark("after_reply")
    floors.clock.end()


# ------------------------------------------------------------------ the client
def handle_ext(hid: int) -> msgpack.ExtType:
    return msgpack.ExtType(1, hid.to_bytes(8, "little", signed=True))


class Client:
    def __init__(self, path: str, spin: float) -> None:
        self.spin = spin
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        from worker_micro import sync_batches   # the batches a client sends for this op
        self.batches = sync_batches(4000)
        self.turn = 0

    mailbox = None   # set while requests go through shared memory

    def ask(self, mode: bytes, body: bytes = b"") -> bytes:
        if self.mailbox is not None:
            return self.mailbox.request(mode + body)
        send(self.sock, mode + body)
        return recv(self.sock, self.spin)

    def route(self, shared: bool) -> None:
        """Send the next requests through the mailbox (*shared*) or the socket."""
        if shared and self.mailbox is None:
            if self._mailbox is None:
                self._mailbox = Mailbox(self.path + ".shm", create=True)
            assert self.ask(b"S") == b"ok"
            self.mailbox = self._mailbox
        elif not shared and self.mailbox is not None:
            assert self.mailbox.request(b"q") == b"ok"
            self.mailbox = None

    _mailbox = None

    def op(self, mode: str):
        shared = mode.startswith("shm-")
        fn = self._op(mode[4:] if shared else mode)

        def routed():
            if (self.mailbox is not None) is not shared:
                self.route(shared)
            return fn()
        return routed

    def _op(self, mode: str):
        if mode == "raw":
            return lambda: self.ask(b"r")
        if mode == "ideal":
            return lambda: _DOUBLE.unpack(self.ask(b"i"))[0]
        if mode in ("graph", "graph-ahead"):
            code = b"G" if mode == "graph" else b"A"
            return lambda: _DOUBLE.unpack(self.ask(code))[0]
        if mode == "executor":
            def executor_op():
                body = self.batches[self.turn % len(self.batches)]
                self.turn += 1
                reply = msgpack.unpackb(self.ask(b"e", body), raw=False,
                                        ext_hook=lambda code, data: data)
                if reply.get("e"):
                    raise RuntimeError(f"executor: {reply['e']}")
                return reply["v"][0][1]
            return executor_op
        code = b"g" if mode == "generic" else b"m"

        def generic_op():   # the client encodes the records each time, as a client does
            pack = msgpack.packb
            body = pack(["add", 2, [handle_ext(1), 1]]) + pack(["sum", 3, [handle_ext(2)]]) \
                + pack(["float", None, [handle_ext(3)]])
            return msgpack.unpackb(self.ask(code, body))[1][0]
        return generic_op


def client_parts(reps: int) -> dict:
    """The proxy's hot sync once more, on a pool of its own whose workers time their phases
    (GPUWB_WORKER_PHASES), with the client's own steps timed: what each costs per sync (us)."""
    import kernelproxy
    from gpu_backend.pool import LocalPool
    from gpu_backend.worker.phases import read_summaries
    from kernelproxy import links, session as session_module
    from kernelproxy.modules import module_for
    spent: dict = {}

    def timing(cls, name):
        fn = getattr(cls, name)

        @functools.wraps(fn)
        def timed_step(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t0
        setattr(cls, name, timed_step)
        return fn

    steps = [(session_module.Session, "submit"), (session_module.Session, "flush"),
             (session_module.Session, "_take_reply"), (links.UnixLink, "send"),
             (links.UnixLink, "recv")]
    originals = [(cls, name, timing(cls, name)) for cls, name in steps]
    where = tempfile.mkdtemp(prefix="gpuwb-phases-")
    os.environ["GPUWB_WORKER_PHASES"] = where
    pool = LocalPool(devices="auto", policy="none").start()
    try:
        session = kernelproxy.connect(pool.address, pool.token)
        px = module_for(session)
        y = px.arange(1024, dtype=px.float32)
        for _ in range(300):
            float((y + 1).sum())
        spent.clear()
        times = timed(lambda: float((y + 1).sum()), reps)
        session.close()
    finally:
        pool.stop()
        del os.environ["GPUWB_WORKER_PHASES"]
        for cls, name, fn in originals:
            setattr(cls, name, fn)
    # the worker writes its phases as its session ends
    worker = next((s for s in read_summaries(where, 1) if s.get("messages", 0) > reps), {})
    if not worker:
        print("no worker phases in", where, os.listdir(where), file=sys.stderr)
    return {"hot_us": statistics.median(times) * 1e6,
            "client_us": {k: v / reps * 1e6 for k, v in spent.items()},
            "worker_phases": worker}


def in_process(reps: int) -> dict:
    """The server's work for ideal, generic and generic+meta called in a loop in this process
    (no socket, no other process): what the "in server" column would be with everything hot
    (medians of five blocks, us)."""
    floors = Floors()
    pack = msgpack.packb
    body = pack(["add", 2, [handle_ext(1), 1]]) + pack(["sum", 3, [handle_ext(2)]]) \
        + pack(["float", None, [handle_ext(3)]])
    out = {}
    for mode, code in (("ideal", "i"), ("generic", "g"), ("generic+meta", "m")):
        for _ in range(300):
            floors.serve(code, body)
            floors.after()
        blocks = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(max(1, reps // 5)):
                floors.serve(code, body)
                floors.after()
            blocks.append((time.perf_counter() - t0) / max(1, reps // 5))
        out[mode] = statistics.median(blocks) * 1e6
    return out


def timed(fn, reps: int, idle: float = 0.0) -> list[float]:
    times = []
    for _ in range(reps):
        if idle:
            time.sleep(idle)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=2000, help="hot round trips per mode and round")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--idle-reps", type=int, default=100, help="after 10 ms idle, per mode and round")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--parts", action="store_true",
                        help="then time the client's steps and the worker's phases of the proxy's sync")
    parser.add_argument("--client-spin", type=float, default=CLIENT_SPIN if SPIN else 0.0,
                        help="seconds the client spins for a reply before it blocks (0: blocks at once)")
    parser.add_argument("--server-spin", type=float, default=SERVER_SPIN if SPIN else 0.0,
                        help="seconds the server spins for a request before it blocks")
    parser.add_argument("--cpus", help="CLIENT,SERVER: pin this process and the server to one CPU "
                        "each (a microVM's vCPUs may share physical cores: spinning beside a "
                        "sibling slows it)")
    parser.add_argument("--in-process", action="store_true",
                        help="then time the server's work for ideal, generic and generic+meta in "
                        "this process, in a loop")
    parser.add_argument("--json")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--server-cpu", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        server(args.serve, args.server_spin, args.server_cpu)
        return 0
    client_cpu = server_cpu = None
    if args.cpus:
        client_cpu, server_cpu = (int(c) for c in args.cpus.split(","))
        os.sched_setaffinity(0, {client_cpu})
    modes = [m for m in args.modes.split(",") if m]
    # without local (or proxy) modes this process makes no CUDA context of its own
    xp = array_module() if {"local", "proxy"} & set(modes) else __import__("numpy")
    path = os.path.join(tempfile.mkdtemp(prefix="gpuwb-floor-"), "s")
    serve = [sys.executable, os.path.abspath(__file__), "--serve", path,
             "--server-spin", str(args.server_spin)]
    if server_cpu is not None:
        serve += ["--server-cpu", str(server_cpu)]
    child = subprocess.Popen(serve, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    client = Client(path, args.client_spin)
    pool = session = split = executor_phases = None
    if "proxy" in modes:
        import kernelproxy
        from gpu_backend.pool import LocalPool
        from kernelproxy.modules import module_for
        pool = LocalPool(devices="auto", policy="none").start()
        session = kernelproxy.connect(pool.address, pool.token)
        px = module_for(session)
        y = px.arange(1024, dtype=px.float32)
    x = xp.arange(1024, dtype=xp.float32)
    ops = {m: client.op(m) for m in modes if m not in ("local", "proxy")}
    ops["local"] = lambda: float((x + 1).sum())
    if session is not None:
        ops["proxy"] = lambda: float((y + 1).sum())
    expected = float((x + 1).sum())
    hot = {m: [] for m in modes}
    idle = {m: [] for m in modes}
    try:
        for m in modes:   # warm-up, and every mode answers the same value
            for _ in range(300):
                got = ops[m]()
            if m not in ("raw", "shm-raw") and got != expected:
                raise SystemExit(f"{m} answered {got}, expected {expected}")
        for r in range(args.rounds):
            for m in (modes if r % 2 == 0 else modes[::-1]):
                hot[m] += timed(ops[m], args.reps)
                if args.idle_reps:
                    idle[m] += timed(ops[m], args.idle_reps, 0.010)
        if session is not None:   # the proxy's op in its parts, and the worker's own time
            from worker_micro import split_sync_op
            split = {"local": split_sync_op(x, args.reps), "proxy": split_sync_op(y, args.reps, session)}
        client.route(False)
        served = json.loads(client.ask(b"s"))
        if "executor" in modes:
            executor_phases = served
    finally:
        client.sock.close()
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:   # left spinning on the mailbox mid-mode
            child.kill()
            child.wait()
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)   # the socket and the mailbox
        if session is not None:
            session.close()
            pool.stop()
    rows = {}
    for m in modes:
        row = {"hot_us": statistics.median(hot[m]) * 1e6}
        if idle[m]:
            s = sorted(idle[m])
            row["idle_p50_us"] = s[len(s) // 2] * 1e6
            row["idle_p99_us"] = s[int(len(s) * 0.99)] * 1e6
        rows[m] = row
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
               "python": sys.version.split()[0], "array_module": xp.__name__,
               "client_spin": args.client_spin, "server_spin": args.server_spin,
               "pinned": args.cpus, "cpus": os.cpu_count(), "reps": args.reps,
               "rounds": args.rounds, "modes": rows}
    if xp.__name__ == "cupy":
        props = xp.cuda.runtime.getDeviceProperties(0)
        results["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    if split is not None:
        results["split_us"] = split
    if executor_phases is not None:
        results["executor_phases"] = executor_phases
    if args.parts and session is not None:
        results["proxy_parts"] = client_parts(args.reps)
    if args.in_process:
        results["in_process_us"] = in_process(args.reps)
    local = rows.get("local", {}).get("hot_us")
    raw = rows.get("raw", {}).get("hot_us")
    if local is not None and raw is not None:
        results["target_us"] = raw + local + 20
    served_us = served.pop("served_us", {})
    codes = {"raw": "r", "ideal": "i", "graph": "G", "graph-ahead": "A", "generic": "g",
             "generic+meta": "m", "executor": "e"}
    for m, row in rows.items():
        shared = m.startswith("shm-")
        code = codes.get(m[4:] if shared else m)
        if code is not None and ("shm-" * shared) + code in served_us:
            row["server_us"] = served_us[("shm-" * shared) + code]
    print(f"{'mode':14} {'hot us':>9} {'- raw - local':>14} {'idle p50':>9} {'idle p99':>9} {'in server':>9}"
          f"   ({xp.__name__}, spin client {args.client_spin * 1e6:.0f} us, server "
          f"{args.server_spin * 1e6:.0f} us{', pinned ' + args.cpus if args.cpus else ''})")
    for m, row in rows.items():
        beyond = row["hot_us"] - (raw or 0) - (local or 0) if m not in ("local", "raw") else float("nan")
        print(f"{m:14} {row['hot_us']:9.1f} {beyond:14.1f} {row.get('idle_p50_us', float('nan')):9.1f}"
              f" {row.get('idle_p99_us', float('nan')):9.1f} {row.get('server_us', float('nan')):9.1f}")
    if "target_us" in results:
        print(f"target (raw + local + 20 us): {results['target_us']:.1f} us")
    if split is not None:
        for side, parts in split.items():
            print(f"{side} in parts (us): " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()))
    if executor_phases is not None:
        print("executor behind a socket, its phases (median us):",
              ", ".join(f"{k} {v:.1f}" for k, v in executor_phases["median_us"].items()))
    if "in_process_us" in results:
        print("the same work in this process, in a loop (us):",
              ", ".join(f"{k} {v:.1f}" for k, v in results["in_process_us"].items()))
    if "proxy_parts" in results:
        parts = results["proxy_parts"]
        print(f"proxy again ({parts['hot_us']:.1f} us), the client's steps per sync (us):",
              ", ".join(f"{k} {v:.1f}" for k, v in parts["client_us"].items()))
        if parts["worker_phases"]:
            print("  its worker's phases (median us):",
                  ", ".join(f"{k} {v:.1f}" for k, v in parts["worker_phases"]["median_us"].items()))
    emit(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
