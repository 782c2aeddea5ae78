"""Issue 52: what moving a session costs, and a pool's restart, beside the host's copy rates.

A session fills --gib of device memory in --arrays arrays, each checksummed. Then, each in
the same run:

- **move** (``--devices 0,1`` or ``cpu,cpu``; with one device, to a fresh worker of the
  same device): the administration socket moves the session to the other device
  (``gpuwb-backend move``); measured: the move itself (within a host the old worker lends
  its arrays, CUDA IPC on a GPU, and a spare of the other device copies them device to
  device: the request until the pool says the session is there), then the client's first
  op, and the whole; the GPU's memory in use before and after (every process's);
- **move-hosts**: a move between two hosts of a pool across hosts (two host agents on
  threads, both on this machine and its first device): the old worker streams the arrays
  to the new one over loopback tcp; beside it, the loopback's own rate (plain sockets);
- **park** (``--park-idle``): the session swapped out, then parked (its worker exits): the
  device memory in use active, swapped and parked (a GPU's: every process's), and its next
  op's wait (a spare takes it back);
- **restart** (``gpuwb-backend serve`` as a process, stopped with SIGTERM, started again on
  the same swap directory): the stop (every session parked), the next pool's start, the
  client's first op (it finds its session, its arrays come back), and the whole.

Every array's checksum after must equal its checksum before (bitwise: a sum of its bits as
unsigned integers). The reference: the device's pinned copy rate each way for the same bytes
(benchmarks/swap.py's ``reference_rates``). ``--swap-dirs /tmp,/dev/shm``: each directory in
turn (the parked arrays go through its files). Prints a table and JSON.

    python benchmarks/moves.py --devices 0 --gib 10 --arrays 10 --swap-dirs /tmp,/dev/shm
"""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import kernelproxy  # noqa: E402
from gpu_backend.cli_moves import admin_request  # noqa: E402
from gpu_backend.pool import LocalPool  # noqa: E402
from gpu_backend.served import ServedPool  # noqa: E402
from json_out import emit  # noqa: E402
from kernelproxy.modules import module_for  # noqa: E402
from swap import reference_rates  # noqa: E402

GIB = 1 << 30


def _fill(session, nbytes: int, count: int) -> tuple[list, list[int]]:
    """*count* float32 arrays of *nbytes* in all, made on the device, and their checksums."""
    cp = module_for(session)
    n = max(1, nbytes // count // 4)
    # (one allocation made and freed first: the arrays are carved out of it by CuPy's pool,
    # at offsets inside one cudaMalloc, as a notebook's arrays often are)
    carved = cp.empty(n * 4 * count + (1 << 20), dtype=cp.uint8)
    del carved
    arrays = []
    for k in range(count):   # (in place: no temporaries of an array's size on the device)
        a = cp.arange(n, dtype=cp.float32)
        a *= k + 1
        a += 0.5
        arrays.append(a)
    return arrays, _sums(arrays)


def _sums(arrays: list) -> list[int]:
    """Each array's bits summed as unsigned integers: equal only if (almost surely) bitwise."""
    return [int(a.view("uint32").sum(dtype="uint64")) for a in arrays]


def _where(admin: str, sid: str) -> dict:
    return next(r for r in admin_request(admin, {"t": "moves"})["sessions"] if r["session"] == sid)


def _timed_move(pool, nbytes: int, count: int) -> dict:
    """A session of *nbytes* in *count* arrays moved by the administration socket to the
    pool's other device (its own, with one: a fresh worker of it, the same steps but the
    copy's path), timed: the move, the client's first op, the whole; bitwise after."""
    admin = pool.door.admin.address
    s = kernelproxy.connect(pool.address, pool.token)
    try:
        arrays, before = _fill(s, nbytes, count)
        start = _where(admin, s.id)["device"]
        target = next((d for d in pool.door.devices if d != start), start)
        t0 = time.perf_counter()
        assert admin_request(admin, {"t": "move", "session": s.id, "device": target})["ok"]
        while (r := _where(admin, s.id))["moves"] < 1 or r["moving"]:
            if r["refused"]:
                return {"error": r["refused"]}
            time.sleep(0.002)
        t1 = time.perf_counter()
        after = _sums(arrays[:1])   # the first op (swapped in first, after a move by file)
        t2 = time.perf_counter()
        after += _sums(arrays[1:])
        return {"from": start, "to": target, "how": r["how"], "move_s": t1 - t0,
                "first_op_s": t2 - t1, "total_s": t2 - t0, "bitwise": after == before}
    finally:
        s.close()


def measure_move(devices: str, nbytes: int, count: int, swap_dir: str) -> dict:
    with LocalPool(devices=devices, swap_dir=swap_dir, swap_idle=None, lease_timeout=600,
                   memory_limit=nbytes + 4 * GIB) as pool:
        used_before = _device_used(devices)
        run = _timed_move(pool, nbytes, count)
        time.sleep(0.5)   # (the old worker's exit, after its release)
        return {**run, "device_used_before": used_before, "device_used_after": _device_used(devices)}


def _device_used(devices: str) -> int | None:
    """Bytes in use on the (first) GPU, all processes together; None on the NumPy device."""
    if not devices.split(",")[0].isdigit():
        return None
    import cupy as cp
    with cp.cuda.Device(int(devices.split(",")[0])):
        free, total = cp.cuda.runtime.memGetInfo()
    return int(total - free)


def loopback_rate(nbytes: int, piece: int = 16 << 20) -> float:
    """Bytes a second that this host's loopback tcp carries between two plain sockets of
    one process (a sender thread's ``sendall``, a receiver's ``recv_into`` a reused
    buffer: each a system call that lets the other thread run): the raw transport a move
    between hosts takes here, as the reference."""
    import socket
    import threading
    server = socket.create_server(("127.0.0.1", 0))
    sender = socket.create_connection(server.getsockname())
    receiver, _ = server.accept()
    data = memoryview(bytearray(piece))
    total = max(1, nbytes // piece) * piece

    def send() -> None:
        for _ in range(total // piece):
            sender.sendall(data)
    buffer = memoryview(bytearray(piece))
    t0 = time.perf_counter()
    thread = threading.Thread(target=send)
    thread.start()
    got = 0
    while got < total:
        got += receiver.recv_into(buffer)
    thread.join()
    seconds = time.perf_counter() - t0
    for sock in (sender, receiver, server):
        sock.close()
    return total / seconds


def measure_move_hosts(devices: str, nbytes: int, count: int, swap_dir: str) -> dict:
    """A move between two hosts of a pool (host agents on threads, as Ray deploys them,
    both on this machine and its first device): the old worker streams the arrays over
    loopback tcp (worker/loan_stream.py)."""
    from gpu_backend.config import PoolSettings
    from gpu_backend.multihost.host_agent import HostAgent
    from gpu_backend.worker.loan_stream import LANES
    import threading
    first = devices.split(",")[0]
    spec = f"cuda:{first}" if first.isdigit() else "cpu:0"
    with LocalPool(cluster="manual", swap_dir=swap_dir, swap_idle=None, lease_timeout=600,
                   memory_limit=nbytes + 4 * GIB) as pool:
        agents = []
        for name in ("alpha", "beta"):
            door = pool.door.cluster.agents
            door.secrets[name] = secret = secrets.token_hex(16)
            agent = HostAgent(door.address, name, secret, "127.0.0.1", [spec], PoolSettings())
            thread = threading.Thread(target=agent.run, daemon=True)
            thread.start()
            agents.append((agent, thread))
        try:
            deadline = time.monotonic() + 120
            while len(pool.door.devices) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            run = _timed_move(pool, nbytes, count)
            if "how" in run:
                run["how"] += ", streamed"
            return {**run, "loopback_gbps": loopback_rate(min(nbytes, 4 * GIB)) / 1e9,
                    "lanes": LANES}
        finally:
            for agent, thread in agents:
                agent.stop()
                thread.join(30)


def measure_park(devices: str, nbytes: int, count: int, swap_dir: str) -> dict:
    """An idle session swapped out, then parked (--park-idle: its worker exits): the device
    memory in use at each stage, and its next op's wait (a spare takes it back)."""
    with LocalPool(devices=devices.split(",")[0], swap_dir=swap_dir, swap_idle=1.0,
                   park_idle=2.0, lease_timeout=600, memory_limit=nbytes + 4 * GIB,
                   swap_host_memory=0) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        try:
            arrays, before = _fill(s, nbytes, count)
            row = lambda: next(r for r in s.status()["sessions"] if r["session"] == s.id)  # noqa: E731
            active = _device_used(devices)
            t0 = time.perf_counter()
            while not row()["swapped"]:
                time.sleep(0.01)
            swapped = _device_used(devices)
            while not row()["parked"]:
                time.sleep(0.01)
            t1 = time.perf_counter()
            time.sleep(1.0)   # (the worker's process ends: its context goes with it)
            parked = _device_used(devices)
            t2 = time.perf_counter()
            after = _sums(arrays[:1])
            t3 = time.perf_counter()
            after += _sums(arrays[1:])
            return {"device_used_active": active, "device_used_swapped": swapped,
                    "device_used_parked": parked, "swapped_to_parked_s": t1 - t0,
                    "first_op_s": t3 - t2, "total_s": t3 - t2, "moves": s.moves,
                    "bitwise": after == before}
        finally:
            s.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def measure_restart(devices: str, nbytes: int, count: int, swap_dir: str) -> dict:
    token, port = secrets.token_urlsafe(24), _free_port()
    extra = ["--listen", f"tcp://127.0.0.1:{port}", "--swap-dir", swap_dir, "--swap-idle", "36000",
             "--lease-timeout", "600", "--memory-limit", str(nbytes + 4 * GIB)]
    first = ServedPool("fair", devices, *extra, token=token)
    second = None
    s = kernelproxy.connect(first.local_address or first.address, token)
    try:
        arrays, before = _fill(s, nbytes, count)
        t0 = time.perf_counter()
        first.stop()   # SIGTERM: every session parked
        t1 = time.perf_counter()
        second = ServedPool("fair", devices, *extra, token=token)
        t2 = time.perf_counter()
        after = _sums(arrays[:1])
        t3 = time.perf_counter()
        after += _sums(arrays[1:])
        return {"stop_s": t1 - t0, "start_s": t2 - t1, "first_op_s": t3 - t2,
                "total_s": t3 - t0, "moves": s.moves, "bitwise": after == before}
    finally:
        s.close()
        first.stop()
        if second is not None:
            second.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="cpu,cpu", help="the pool's devices (0,1; cpu,cpu)")
    parser.add_argument("--gib", type=float, default=0.25)
    parser.add_argument("--arrays", type=int, default=4)
    parser.add_argument("--swap-dirs", default="", help="comma list (default: a new temporary one)")
    parser.add_argument("--what", default="move,move-hosts,restart,park")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    nbytes = int(args.gib * GIB)
    gpu = args.devices.split(",")[0].isdigit()
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join(["python", "benchmarks/moves.py", *sys.argv[1:]]),
              "devices": args.devices, "bytes": nbytes, "arrays": args.arrays,
              "reference": reference_rates(args.devices if gpu else "cpu", nbytes), "runs": []}
    dirs = [d for d in args.swap_dirs.split(",") if d] or [None]
    for base in dirs:
        with tempfile.TemporaryDirectory(prefix="gpuwb-moves-", dir=base) as swap_dir:
            for what in args.what.split(","):
                measure = {"move": measure_move, "restart": measure_restart,
                           "park": measure_park, "move-hosts": measure_move_hosts}[what]
                run = measure(args.devices, nbytes, args.arrays, swap_dir)
                result["runs"].append({"what": what, "swap_dir": base or "(temporary)", **run})
    ref = result["reference"]
    print(f"{nbytes / GIB:.2f} GiB in {args.arrays} arrays on {args.devices}; reference "
          f"{ref['what']}: {ref['d2h_gbps']:.1f} GB/s out, {ref['h2d_gbps']:.1f} GB/s in")
    for run in result["runs"]:
        if run.get("loopback_gbps"):
            print(f"move-hosts: loopback tcp (two plain sockets) {run['loopback_gbps']:.1f} GB/s; "
                  f"the session's bytes moved at {nbytes / run['move_s'] / 1e9:.1f} GB/s "
                  f"over {run['lanes']} connection(s)")
        if run.get("device_used_after") is not None:
            print(f"move: device memory in use {run['device_used_before'] / GIB:.2f} GiB before, "
                  f"{run['device_used_after'] / GIB:.2f} GiB after (every process's)")
    print(f"{'what':<8} {'swap dir':<12} {'move/stop':>10} {'start':>8} {'first op':>9} "
          f"{'total':>8} bitwise")
    for run in result["runs"]:
        if run["what"] == "park" and run.get("device_used_active") is not None:
            print(f"park: device memory in use {run['device_used_active'] / GIB:.2f} GiB active, "
                  f"{run['device_used_swapped'] / GIB:.2f} swapped, "
                  f"{run['device_used_parked'] / GIB:.2f} parked")
        if "total_s" not in run:
            print(f"{run['what']:<8} {run['swap_dir']:<12} {run.get('skipped') or run.get('error')}")
            continue
        first = run.get("move_s", run.get("stop_s", run.get("swapped_to_parked_s")))
        what = f"{run['what']} ({run['how']})" if run.get("how") else run["what"]
        print(f"{what:<8} {run['swap_dir']:<12} {first:>9.3f}s "
              f"{run.get('start_s', 0.0):>7.3f}s {run['first_op_s']:>8.3f}s {run['total_s']:>7.3f}s "
              f"{run['bitwise']}")
    emit(result, args.json)
    return 0 if all(r.get("bitwise", True) for r in result["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
