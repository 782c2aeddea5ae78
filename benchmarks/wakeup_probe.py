"""Where a sync after idle loses its time: the host's wake-ups, its timers, the GPU's clocks.

    python benchmarks/wakeup_probe.py [--reps 400] [--idle-ms 10] [--json out.json]

A person in a notebook syncs every few milliseconds, not back to back, and each
sync then pays for whatever went to sleep meanwhile. This probe measures the
parts separately, on the machine at hand, with no part of gpu-workbench:

- ``timer``: how late ``time.sleep(idle)`` returns (timer granularity, a halted vCPU);
- ``zmq``: a 100-byte round trip between two processes (DEALER -> ROUTER, loopback TCP
  and ipc), hot (back to back) and after ``idle`` ms, with each side either blocking in
  ``poll`` or spinning on ``poll(0)``: which side's wake-up costs what;
- ``gpu``: local CuPy's ``float((x + 1).sum())`` hot and after ``idle`` ms, and the SM
  clock nvidia-smi reports while idle and while busy (a GPU that clocked down).

Prints a table (medians and tails in µs) and JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import zmq


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def summary(samples: list[float]) -> dict:
    us = [v * 1e6 for v in samples]
    return {"p50": pct(us, 0.5), "p99": pct(us, 0.99), "p999": pct(us, 0.999), "n": len(us)}


# ------------------------------------------------------------------ the echo process

def echo(address: str, spin: bool) -> None:
    """Answer every message; between them block in poll, or spin on poll(0)."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.bind(address)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        if spin:
            while not sock.poll(0):
                pass
        else:
            sock.poll(-1)
        ident, msg = sock.recv_multipart()
        if msg == b"stop":
            break
        sock.send_multipart([ident, msg])
    sock.close(0)
    ctx.term()


def round_trips(address: str, server_spins: bool, client_spins: bool, idle: float,
                reps: int) -> list[float]:
    proc = subprocess.Popen([sys.executable, __file__, "--echo", address] +
                            (["--spin"] if server_spins else []), stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.connect(address)
    payload = b"x" * 100
    out = []
    for i in range(reps + 20):
        if idle:
            time.sleep(idle)
        t0 = time.perf_counter()
        sock.send(payload)
        if client_spins:
            while not sock.poll(0):
                pass
        else:
            sock.poll(-1)
        sock.recv()
        if i >= 20:
            out.append(time.perf_counter() - t0)
    sock.send(b"stop")
    proc.wait(10)
    sock.close(0)
    ctx.term()
    return out


# ------------------------------------------------------------------ the GPU

def gpu_clock() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,pstate",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "n/a"


def gpu_cases(idle: float, reps: int) -> dict:
    try:
        import cupy as cp
    except ImportError:
        return {}
    x = cp.arange(1024, dtype=cp.float32)
    for _ in range(200):
        float((x + 1).sum())
    out = {}
    for name, pause in (("hot", 0.0), ("after idle", idle)):
        samples = []
        for _ in range(reps):
            if pause:
                time.sleep(pause)
            t0 = time.perf_counter()
            float((x + 1).sum())
            samples.append(time.perf_counter() - t0)
        out[name] = summary(samples)
    time.sleep(2)
    out["clock idle"] = gpu_clock()
    a = cp.random.rand(4096, 4096, dtype=cp.float32)
    for _ in range(50):
        a @ a
    out["clock busy"] = gpu_clock()
    cp.cuda.Device().synchronize()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--echo", help=argparse.SUPPRESS)
    parser.add_argument("--spin", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--idle-ms", type=float, default=10.0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.echo:
        echo(args.echo, args.spin)
        return 0
    idle = args.idle_ms / 1e3
    results: dict = {"idle_ms": args.idle_ms, "cpus": os.cpu_count()}
    lateness = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        time.sleep(idle)
        lateness.append(time.perf_counter() - t0 - idle)
    results["timer"] = {"sleep lateness": summary(lateness)}
    zmq_rows = {}
    addresses = {"tcp": "tcp://127.0.0.1:%d", "ipc": "ipc:///tmp/gpuwb-probe-%d"}
    port = 47000 + os.getpid() % 1000
    for transport, template in addresses.items():
        for server_spins in (False, True):
            for client_spins in (False, True):
                for label, pause in (("hot", 0.0), ("idle", idle)):
                    port += 1
                    key = (f"{transport} {label} server {'spins' if server_spins else 'blocks'} "
                           f"client {'spins' if client_spins else 'blocks'}")
                    zmq_rows[key] = summary(round_trips(template % port, server_spins, client_spins,
                                                        pause, args.reps))
    results["zmq"] = zmq_rows
    results["gpu"] = gpu_cases(idle, args.reps)
    print(f"{'case':58} {'p50 µs':>9} {'p99 µs':>9} {'p99.9 µs':>9}")
    for group in ("timer", "zmq", "gpu"):
        for name, row in results[group].items():
            if isinstance(row, dict):
                print(f"{group + ' ' + name:58} {row['p50']:9.1f} {row['p99']:9.1f} {row['p999']:9.1f}")
            else:
                print(f"{group + ' ' + name:58} {row}")
    text = json.dumps(results, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
