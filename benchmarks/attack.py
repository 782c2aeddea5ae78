"""The pool attacked and faulted at scale, on one host: does it hold, and at what cost?

    python benchmarks/attack.py [--devices cpu] [--json out.json] [--quick]
        [--parts fuzz,flood,flood_open,flood_names,clients,churn,death,detect]

The attack suite's tests (tests/gpu_backend/test_attack_*.py, test_fuzz_frames.py,
test_faults_lifecycle.py) run each attack small enough for CI; this runs them at the
counts of the hardening issue, against ``gpuwb-backend serve`` in a process of its own,
using the tests' own attackers (tests/hostile.py):

* ``fuzz``: 100 000 seeded frames at the front door and 100 000 batches at a worker
  (tcp and unix), pipelined; every one answered, a bystander intact.
* ``flood``: 1 000 connections sending hellos with wrong tokens for a real user's name
  as fast as the pool answers, for 30 s, from 4 processes; a bystander (another user,
  signed in before) syncs ``float((x + 1).sum())`` every 10 ms: its latency alone, then
  during the flood (target: p99 within 10 ms of alone), its lease kept, the hashes the
  back-off allowed.
* ``flood_names``: 1 000 000 hellos, each with a user name never seen before and a wrong
  token, from one loopback client (32 connections, 400 outstanding each: more than the
  tarpit holds, so the flood goes at the door's pace), while a bystander (signed in
  before, from the same address) syncs every 10 ms: the pool's RSS before, at its peak and
  after (target: within +10 MB; what the door keeps per name is bounded), every hello
  answered, the bystander's latency and its lease kept (issue 49).
* ``clients``: 32 client processes, each 10 000 ops whose results it checks.
* ``churn``: 1 000 sessions opened and closed; the pool's memory, descriptors, workers
  and run directories before and after.
* ``death``: the pool SIGKILLed with busy sessions on tcp and ipc and warm spares: how
  long until no worker is left (target: about 2 s), its run directory gone, what the
  clients raised.
* ``detect``: a tcp session's worker SIGKILLed: how long until the client knows
  (target: within 1 s).

Timings mean little on a loaded machine; the counts (answered, lost, left over) are
what the issue's targets judge. Prints a table, then one JSON object (also --json).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
import zmq  # noqa: E402

import kernelproxy  # noqa: E402
from gpu_backend.pool import LocalPool  # noqa: E402
from gpu_backend.protocol import codec, framing  # noqa: E402
from gpu_backend.runtime.run_dir import PREFIX  # noqa: E402
from gpu_backend.served import ServedPool  # noqa: E402
from gpu_backend.accounting.users import User, hash_token, new_token, save_users  # noqa: E402
from json_out import emit  # noqa: E402  (beside this file)
from kernelproxy.modules import module_for  # noqa: E402
from tests.hostile import door_fuzz_frames, process_state, worker_fuzz_batches, worker_processes  # noqa: E402

IN_FLIGHT = 64
PARTS = ("fuzz", "flood", "flood_open", "flood_names", "clients", "churn", "death", "detect")


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _pipelined(sock, messages: list[list[bytes]], in_flight: int = IN_FLIGHT) -> list[list[bytes]]:
    replies, sent = [], 0
    while len(replies) < len(messages):
        while sent < len(messages) and sent - len(replies) < in_flight:
            sock.send_multipart(messages[sent])
            sent += 1
        if not sock.poll(60_000):
            raise RuntimeError(f"no reply to frame {len(replies)}")
        replies.append(sock.recv_multipart())
    return replies


def _pipelined_many(ctx, address: str, messages: list[list[bytes]], connections: int = 32,
                    in_flight: int = IN_FLIGHT) -> list[list[bytes]]:
    """*messages* dealt round-robin to *connections* DEALERs, each with *in_flight*
    outstanding (a client that leaves ZeroMQ's high-water mark of replies unread loses
    replies: the door drops what a peer does not take, to keep its memory bounded)."""
    socks = [ctx.socket(zmq.DEALER) for _ in range(connections)]
    queues = [messages[i::connections] for i in range(connections)]
    sent, got = [0] * connections, [0] * connections
    replies: list[list[bytes]] = []
    poller = zmq.Poller()
    for sock in socks:
        sock.connect(address)
        poller.register(sock, zmq.POLLIN)
    index = {sock: i for i, sock in enumerate(socks)}
    while len(replies) < len(messages):
        for i, sock in enumerate(socks):
            while sent[i] < len(queues[i]) and sent[i] - got[i] < in_flight:
                sock.send_multipart(queues[i][sent[i]])
                sent[i] += 1
        events = poller.poll(60_000)
        if not events:
            raise RuntimeError(f"no reply within 60 s ({len(replies)} of {len(messages)})")
        for sock, _ in events:
            while sock.poll(0):
                replies.append(sock.recv_multipart())
                got[index[sock]] += 1
    for sock in socks:
        sock.close(linger=0)
    return replies


# ------------------------------------------------------------------ fuzz

def fuzz(devices: str, frames: int) -> dict:
    out = {}
    with ServedPool("fair", devices, "--memory-limit", str(256 << 20)) as pool:
        bystander = kernelproxy.connect(pool.address, pool.token)
        kept = module_for(bystander).arange(1000.0)
        float(kept.sum())
        ctx = zmq.Context()
        try:
            started = time.perf_counter()
            # (throttled sign-ins are answered when their wait is over: many connections)
            replies = _pipelined_many(ctx, pool.tcp_address, door_fuzz_frames(seed=1, count=frames))
            took = time.perf_counter() - started
            errors: dict[str, int] = {}
            for reply in replies:
                msg = codec.unpackb(reply[0])
                name = "ok" if msg.get("ok") else msg["error"][0]
                errors[name] = errors.get(name, 0) + 1
            out["door"] = {"frames": frames, "answered": len(replies), "seconds": round(took, 2),
                           "per_second": round(frames / took), "answers": errors}
            for transport, address in (("tcp", pool.tcp_address), ("unix", pool.local_address)):
                victim = kernelproxy.connect(address, pool.token)
                batches = worker_fuzz_batches(seed=2, count=frames, key=victim.key)
                batches.append([codec.packb({"k": victim.key, "b": 3 * 10**6, "n": 0, "r": 2**64 - 1})])
                started = time.perf_counter()
                if transport == "tcp":
                    worker = ctx.socket(zmq.DEALER)
                    worker.connect(victim.worker_address)
                    raw = [r[0] for r in _pipelined(worker, batches)]
                    worker.close(linger=0)
                else:
                    raw = _over_unix(victim, batches)
                took = time.perf_counter() - started
                errors = {}
                for reply in raw:
                    e = codec.unpackb(reply, any_keys=True).get("e")
                    name = e[1] if e else "ok"
                    errors[name] = errors.get(name, 0) + 1
                alive = float(module_for(victim).ones(3).sum()) == 3.0
                victim.close()
                out[f"worker_{transport}"] = {"batches": len(batches), "answered": len(raw),
                                              "seconds": round(took, 2),
                                              "per_second": round(len(batches) / took),
                                              "plain_memory_errors": errors.get("MemoryError", 0),
                                              "session_goes_on": alive,
                                              "answers": dict(sorted(errors.items(), key=lambda kv: -kv[1]))}
        finally:
            ctx.destroy(linger=0)
        out["bystander_intact"] = bool(np.array_equal(kept.get(), np.arange(1000.0)))
        bystander.close()
    return out


def _over_unix(victim, batches: list[list[bytes]]) -> list[bytes]:
    link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    link.settimeout(60)
    link.connect(victim.worker_address.removeprefix("unix://"))
    framing.send_all(link, [codec.packb({"t": "auth", "k": victim.key})])
    reader, replies = framing.MessageReader(link), []
    for start in range(0, len(batches), IN_FLIGHT):
        chunk = batches[start:start + IN_FLIGHT]
        for frames in chunk:
            framing.send_all(link, frames)
        replies += [reader.read_message()[0].bytes for _ in chunk]
    link.close()
    return replies


# ------------------------------------------------------------------ flood

def _syncs(session, seconds: float, every: float = 0.01) -> list[float]:
    cp = module_for(session)
    x = cp.arange(1000.0)
    float(x.sum())
    times = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        value = float((x + 1).sum())
        times.append(time.perf_counter() - started)
        assert value == 500500.0
        time.sleep(every)
    return times


def flood(devices: str, connections: int, seconds: float, processes: int, alone: float,
          open_loop: bool = False, cpus: set[int] | None = None) -> dict:
    with __import__("tempfile").TemporaryDirectory() as tmp:
        users = Path(tmp) / "users.toml"
        tokens = {"alice": new_token("alice"), "bob": new_token("bob")}
        save_users(users, {n: User(name=n, token_hash=hash_token(t)) for n, t in tokens.items()})
        with ServedPool("fair", devices, "--lease-timeout", "20", users_file=users, metrics=True) as pool:
            bystander = kernelproxy.connect(pool.address, tokens["bob"])
            before = _syncs(bystander, alone)
            per = connections // processes
            floods = [subprocess.Popen([sys.executable, "-m", "tests.hostile", "flood", pool.address,
                                        "alice", str(per), str(seconds),
                                        *(["open"] if open_loop else [])], cwd=ROOT,
                                       stdout=subprocess.PIPE, text=True) for _ in range(processes)]
            for f in floods:   # the attacker's processes on cores of their own, if asked
                if cpus:
                    os.sched_setaffinity(f.pid, cpus)
            during = _syncs(bystander, seconds)
            results = [json.loads(f.communicate(timeout=seconds + 120)[0]) for f in floods]
            lost = bool(bystander.closed or bystander.heartbeat.lost)
            metrics = _scrape(pool.metrics_port)
            started = time.perf_counter()
            with kernelproxy.connect(pool.address, tokens["alice"], timeout=60) as alice:
                float(module_for(alice).ones(2).sum())
            alice_after = time.perf_counter() - started
            bystander.close()
    answered = sum(r["answered"] for r in results)
    return {
        "connections": per * processes, "seconds": seconds, "processes": processes,
        "open_loop": open_loop, "hellos_sent": sum(r["sent"] for r in results),
        "flood_cpus": sorted(cpus) if cpus else "any",
        "hellos_answered": answered, "hellos_per_second": round(answered / seconds),
        "answers": {k: sum(r["answers"].get(k, 0) for r in results)
                    for k in {k for r in results for k in r["answers"]}},
        "bystander_alone_ms": {"p50": round(_pct(before, 0.5) * 1e3, 3),
                               "p99": round(_pct(before, 0.99) * 1e3, 3), "n": len(before)},
        "bystander_flood_ms": {"p50": round(_pct(during, 0.5) * 1e3, 3),
                               "p99": round(_pct(during, 0.99) * 1e3, 3),
                               "max": round(max(during) * 1e3, 3), "n": len(during)},
        "p99_increase_ms": round((_pct(during, 0.99) - _pct(before, 0.99)) * 1e3, 3),
        "target_p99_increase_ms": 10.0,
        "bystander_lease_lost": lost,
        "hashes": metrics.get("gpuwb_auth_hashes_total"),
        "refusals": {k.split('"')[1]: v for k, v in metrics.items()
                     if k.startswith("gpuwb_auth_refusals_total")},
        "real_user_signed_in_after_s": round(alice_after, 3),
    }


def flood_names(devices: str, names: int, connections: int, in_flight: int, alone: float) -> dict:
    """*names* hellos with unique names and wrong tokens (tests.hostile.flood_unique_names, in
    a process of its own) against a served pool; the pool's memory and a bystander's syncs
    meanwhile."""
    with __import__("tempfile").TemporaryDirectory() as tmp:
        users = Path(tmp) / "users.toml"
        token = new_token("bob")
        save_users(users, {"bob": User(name="bob", token_hash=hash_token(token))})
        with ServedPool("fair", devices, "--lease-timeout", "20", users_file=users, metrics=True) as pool:
            # (over tcp, as the flood: the same source, whose back-off the flood sets off)
            bystander = kernelproxy.connect(pool.tcp_address, token)
            kept = module_for(bystander).arange(1000.0)
            before_syncs = _syncs(bystander, alone)
            before = _pool_figures(pool.pid)
            flood = subprocess.Popen([sys.executable, "-m", "tests.hostile", "names", pool.tcp_address,
                                      str(names), str(connections), str(in_flight)], cwd=ROOT,
                                     stdout=subprocess.PIPE, text=True)
            during, rss, sampled = [], [before["rss_mb"]], time.monotonic()
            while flood.poll() is None:   # the bystander's syncs, and the pool's memory
                started = time.perf_counter()
                assert float((kept + 1).sum()) == 500500.0
                during.append(time.perf_counter() - started)
                if time.monotonic() - sampled >= 1.0:
                    rss.append(round(_rss_mb(pool.pid), 1))
                    sampled = time.monotonic()
                time.sleep(0.01)
            result = json.loads(flood.communicate(timeout=60)[0])
            after = _pool_figures(pool.pid)
            lost = bool(bystander.closed or bystander.heartbeat.lost)
            intact = bool(np.array_equal(kept.get(), np.arange(1000.0)))
            metrics = _scrape(pool.metrics_port)
            bystander.close()
    return {
        "names": names, "connections": connections, "in_flight_each": in_flight,
        "hellos_sent": result["sent"], "hellos_answered": result["answered"],
        "unanswered": result["unanswered"], "answers": result["answers"],
        "flood_seconds": result["seconds"],
        "hellos_per_second": round(result["answered"] / max(result["seconds"], 1e-9)),
        "rss_mb": {"before": before["rss_mb"], "peak": max(rss), "after": after["rss_mb"],
                   "increase": round(after["rss_mb"] - before["rss_mb"], 1),
                   "every_s": max(1, len(rss) // 30), "during": rss[::max(1, len(rss) // 30)]},
        "target_rss_increase_mb": 10.0,
        "before": before, "after": after,
        "bystander_alone_ms": {"p50": round(_pct(before_syncs, 0.5) * 1e3, 3),
                               "p99": round(_pct(before_syncs, 0.99) * 1e3, 3), "n": len(before_syncs)},
        "bystander_flood_ms": {"p50": round(_pct(during, 0.5) * 1e3, 3),
                               "p99": round(_pct(during, 0.99) * 1e3, 3),
                               "max": round(max(during, default=float("nan")) * 1e3, 3),
                               "n": len(during)},
        "bystander_lease_lost": lost, "bystander_intact": intact,
        "hashes": metrics.get("gpuwb_auth_hashes_total"),
        "refusals": {k.split('"')[1]: v for k, v in metrics.items()
                     if k.startswith("gpuwb_auth_refusals_total")},
    }


def _scrape(port: int) -> dict:
    import urllib.request
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found = {}
    for line in text.splitlines():
        if line.startswith("gpuwb_auth"):
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


# ------------------------------------------------------------------ clients

CHECKED_CLIENT = """
    import sys
    import numpy as np
    import kernelproxy
    from kernelproxy.modules import module_for
    session = kernelproxy.connect(sys.argv[1], sys.argv[2])
    cp = module_for(session)
    rng = np.random.default_rng(int(sys.argv[4]))
    host = rng.normal(size=256)
    x = cp.asarray(host)
    wrong = 0
    for i in range(int(sys.argv[3])):
        k = float(i % 7)
        y = x * k + 1.0
        if i % 50 == 49:   # every 50th op's result checked, with a sync
            wrong += not np.allclose(y.get(), host * k + 1.0)
    session.sync()
    print(wrong, session.ops_issued, flush=True)
    session.close()
"""


def clients(devices: str, count: int, ops: int) -> dict:
    with ServedPool("fair", devices, "--spare-workers", "4") as pool:
        started = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(CHECKED_CLIENT),
                                   pool.address if i % 2 else pool.tcp_address, pool.token,
                                   str(ops), str(i)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
                 for i in range(count)]
        outs = [p.communicate(timeout=1800)[0].split() for p in procs]
        took = time.perf_counter() - started
    finished = [o for o, p in zip(outs, procs) if p.returncode == 0 and len(o) == 2]
    return {"clients": count, "ops_each": ops, "finished": len(finished),
            "wrong_results": sum(int(o[0]) for o in finished),
            "ops_issued": sum(int(o[1]) for o in finished), "seconds": round(took, 1)}


# ------------------------------------------------------------------ churn

def _rss_mb(pid: int) -> float:
    """The process's resident memory (VmRSS), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def _pool_figures(pid: int) -> dict:
    return {"rss_mb": round(_rss_mb(pid), 1), "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "workers": len(worker_processes(pid)), "threads": len(os.listdir(f"/proc/{pid}/task")),
            "run_dirs": len([d for d in os.listdir("/tmp") if d.startswith(PREFIX)])}


def churn(devices: str, sessions: int) -> dict:
    with ServedPool("fair", devices) as pool:
        warm = kernelproxy.connect(pool.address, pool.token)
        warm.close()
        time.sleep(2)
        before = _pool_figures(pool.pid)
        started = time.perf_counter()
        for i in range(sessions):
            address = pool.address if i % 2 else pool.tcp_address
            with kernelproxy.connect(address, pool.token) as s:
                float(module_for(s).arange(4.0).sum())
        took = time.perf_counter() - started
        deadline = time.monotonic() + 30
        while len(worker_processes(pool.pid)) > before["workers"] and time.monotonic() < deadline:
            time.sleep(0.2)
        after = _pool_figures(pool.pid)
    return {"sessions": sessions, "seconds": round(took, 1),
            "per_session_ms": round(took / sessions * 1e3, 1), "before": before, "after": after}


# ------------------------------------------------------------------ death

BUSY = """
    import sys
    import kernelproxy
    from kernelproxy.modules import module_for
    session = kernelproxy.connect(sys.argv[1], sys.argv[2])
    cp = module_for(session)
    x = cp.arange(100_000.0)
    print("busy", flush=True)
    try:
        while True:
            float((cp.sin(x) + 1.0).sum())
    except kernelproxy.SessionLostError:
        print("SessionLostError", flush=True)
    except BaseException as exc:
        print(type(exc).__name__, flush=True)
"""


def death(devices: str, kills: int, busy: int) -> dict:
    rounds = []
    for _ in range(kills):
        pool = ServedPool("fair", devices, "--spare-workers", "2")
        procs = []
        try:
            for i in range(busy):
                p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(BUSY),
                                      pool.local_address if i % 2 else pool.tcp_address, pool.token],
                                     cwd=ROOT, stdout=subprocess.PIPE, text=True)
                p.stdout.readline()
                procs.append(p)
            deadline = time.monotonic() + 60
            while len(worker_processes(pool.pid)) < busy + 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            workers = set(worker_processes(pool.pid))
            dirs = [d for d in os.listdir("/tmp") if d.startswith(PREFIX) and
                    Path("/tmp", d, "owner").exists() and
                    Path("/tmp", d, "owner").read_text().split()[0] == str(pool.pid)]
            time.sleep(0.5)
            killed = time.perf_counter()
            pool.kill()
            gone_after = None
            while time.perf_counter() - killed < 30:
                if all(process_state(w) in (None, "Z") for w in workers):
                    gone_after = time.perf_counter() - killed
                    break
                time.sleep(0.01)
            raised = [p.communicate(timeout=60)[0].split()[-1] for p in procs]
            rounds.append({"workers": len(workers), "all_gone_after_s": gone_after and round(gone_after, 3),
                           "run_dir_left": any(Path("/tmp", d).exists() for d in dirs),
                           "clients_raised": raised})
        finally:
            for p in procs:
                p.kill()
            pool.stop()
    return {"rounds": rounds, "target_s": 2.0,
            "worst_s": max((r["all_gone_after_s"] or float("inf")) for r in rounds)}


# ------------------------------------------------------------------ detect

def detect(devices: str, reps: int) -> dict:
    delays = []
    with LocalPool(devices=devices, lease_timeout=60) as pool:
        for _ in range(reps):
            s = kernelproxy.connect(pool.tcp_address, pool.token)
            float(module_for(s).arange(3.0).sum())
            worker = next(w for w in pool.door.host.workers.values()
                          if w.session is not None and w.session.sid == s.id)
            started = time.perf_counter()
            os.kill(worker.process.pid, signal.SIGKILL)
            while s.heartbeat.lost is None and time.perf_counter() - started < 30:
                time.sleep(0.001)
            delays.append(time.perf_counter() - started)
            s.close()
    return {"reps": reps, "lease_timeout_s": 60, "p50_s": round(statistics.median(delays), 3),
            "max_s": round(max(delays), 3), "target_s": 1.0}


# ------------------------------------------------------------------ main

def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="cpu")
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true", help="small counts, for a smoke run")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--flood-connections", type=int, default=1000)
    parser.add_argument("--flood-seconds", type=float, default=30.0)
    parser.add_argument("--flood-processes", type=int, default=4)
    parser.add_argument("--flood-cpus", help="pin the flood's processes to these cores (0,1): an "
                        "attacker elsewhere does not share the pool's cores")
    parser.add_argument("--flood-open-connections", type=int, default=200,
                        help="flood_open: connections that send without waiting for answers")
    parser.add_argument("--names", type=int, default=1_000_000,
                        help="flood_names: hellos, each with a new user name and a wrong token")
    parser.add_argument("--names-connections", type=int, default=32)
    parser.add_argument("--names-in-flight", type=int, default=400,
                        help="flood_names: hellos outstanding on each connection (under ZeroMQ's "
                        "high-water mark, so that none need be dropped)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.quick:
        args.frames, args.flood_connections, args.flood_seconds = 2000, 40, 3.0
        args.flood_open_connections = 20
        args.names = 20_000
        args.clients, args.ops, args.sessions = 4, 500, 20
    parts = [p for p in args.parts.split(",") if p]
    cpus = {int(c) for c in args.flood_cpus.split(",")} if args.flood_cpus else None
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
              "python": sys.version.split()[0], "cores": len(os.sched_getaffinity(0)),
              "devices": args.devices}
    runs = {"fuzz": lambda: fuzz(args.devices, args.frames),
            "flood": lambda: flood(args.devices, args.flood_connections, args.flood_seconds,
                                   args.flood_processes, alone=min(10.0, args.flood_seconds),
                                   cpus=cpus),
            "flood_open": lambda: flood(args.devices, args.flood_open_connections, args.flood_seconds,
                                        args.flood_processes, alone=min(10.0, args.flood_seconds),
                                        open_loop=True, cpus=cpus),
            "flood_names": lambda: flood_names(args.devices, args.names, args.names_connections,
                                               args.names_in_flight, alone=3.0 if args.quick else 10.0),
            "clients": lambda: clients(args.devices, args.clients, args.ops),
            "churn": lambda: churn(args.devices, args.sessions),
            "death": lambda: death(args.devices, kills=1 if args.quick else 3, busy=4),
            "detect": lambda: detect(args.devices, 3 if args.quick else 10)}
    for part in parts:
        started = time.perf_counter()
        result[part] = runs[part]()
        result[part]["took_s"] = round(time.perf_counter() - started, 1)
    print_table(result)
    emit(result, args.json)


def print_table(result: dict) -> None:
    """One line per measured figure: what, how much, the target where the issue sets one."""
    rows = []
    if "fuzz" in result:
        f = result["fuzz"]
        rows.append(("front door fuzz", f"{f['door']['answered']}/{f['door']['frames']} answered, "
                     f"{f['door']['per_second']}/s", "all answered"))
        for t in ("tcp", "unix"):
            w = f[f"worker_{t}"]
            rows.append((f"worker fuzz ({t})", f"{w['answered']}/{w['batches']} answered, "
                         f"{w['plain_memory_errors']} plain MemoryError, goes on: {w['session_goes_on']}",
                         "all answered, none"))
        rows.append(("bystander after fuzz", "intact" if f["bystander_intact"] else "DAMAGED", "intact"))
    for part in ("flood", "flood_open"):
        if part not in result:
            continue
        f = result[part]
        how = "open loop" if f["open_loop"] else "each waits for its answer"
        rows.append((f"wrong-token {part}", f"{f['connections']} conns ({how}) x {f['seconds']:g} s: "
                     f"{f['hellos_sent']} hellos sent, {f['hellos_answered']} answered, "
                     f"{f['hashes']:.0f} hashed", ""))
        rows.append(("  bystander sync p99", f"{f['bystander_alone_ms']['p99']} ms alone, "
                     f"{f['bystander_flood_ms']['p99']} ms in the flood (+{f['p99_increase_ms']})",
                     "+10 ms at most"))
        rows.append(("  bystander lease", "lost" if f["bystander_lease_lost"] else "kept", "kept"))
    if "flood_names" in result:
        f = result["flood_names"]
        rows.append(("unique-name flood", f"{f['hellos_answered']}/{f['names']} answered "
                     f"({f['connections']} conns x {f['in_flight_each']} outstanding) in "
                     f"{f['flood_seconds']} s, {f['hellos_per_second']}/s", "all answered"))
        r = f["rss_mb"]
        rows.append(("  pool RSS", f"{r['before']} -> {r['after']} MB (peak {r['peak']}): "
                     f"+{r['increase']}", "+10 MB at most"))
        rows.append(("  bystander sync", f"p50 {f['bystander_alone_ms']['p50']} / p99 "
                     f"{f['bystander_alone_ms']['p99']} ms alone, p50 {f['bystander_flood_ms']['p50']}"
                     f" / p99 {f['bystander_flood_ms']['p99']} ms in the flood", ""))
        rows.append(("  bystander lease", ("lost" if f["bystander_lease_lost"] else "kept") +
                     (", its array intact" if f["bystander_intact"] else ", its array DAMAGED"),
                     "kept"))
    if "clients" in result:
        c = result["clients"]
        rows.append(("checked clients", f"{c['finished']}/{c['clients']} x {c['ops_each']} ops, "
                     f"{c['wrong_results']} wrong, {c['seconds']} s", "none wrong or lost"))
    if "churn" in result:
        c = result["churn"]
        b, a = c["before"], c["after"]
        rows.append(("session churn", f"{c['sessions']} opened+closed; rss {b['rss_mb']}->{a['rss_mb']} MB, "
                     f"fds {b['fds']}->{a['fds']}, workers {b['workers']}->{a['workers']}, "
                     f"run dirs {b['run_dirs']}->{a['run_dirs']}", "no leak"))
    if "death" in result:
        d = result["death"]
        rows.append(("pool SIGKILL", f"workers gone within {d['worst_s']} s (worst of "
                     f"{len(d['rounds'])}); run dir left: {any(r['run_dir_left'] for r in d['rounds'])}; "
                     f"clients: {sorted({x for r in d['rounds'] for x in r['clients_raised']})}",
                     "~2 s, none, SessionLostError"))
    if "detect" in result:
        d = result["detect"]
        rows.append(("worker death, tcp", f"client knows in {d['p50_s']} s (max {d['max_s']})",
                     "within 1 s"))
    width = max(len(r[0]) for r in rows)
    for what, figure, target in rows:
        print(f"{what:{width}s}  {figure}" + (f"   [target: {target}]" if target else ""))


if __name__ == "__main__":
    main()
