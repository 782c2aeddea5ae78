"""Where a pool across hosts tops out: the front door and its accounts under 64 hosts x 8
GPUs and 1 000 users, with simulated hosts.

    python benchmarks/cluster_scale.py [--hosts 64] [--gpus 8] [--users 1000]
                                       [--rates 5,20,50,100] [--json out.json]

Three processes, as in a deployment:

- **the front door**, the real one (``FrontDoor`` with ``cluster="manual"``: no Ray; the
  benchmark deploys the agents), with a users file of *users* users (real scrypt hashes),
  the fair policy, one spare worker per device, its usage log on disk;
- **the hosts**: *hosts* simulated agents in one process, each a real DEALER that joins
  with its secret and speaks the host agent channel; their "workers" are not processes: a
  ``spawn`` is answered ``ready`` at once, and every worker with a session sends a
  ``usage`` report every ``--usage-every`` seconds (a busy worker's rate), every agent a
  ``load`` every half second;
- **the clients**: one DEALER per user (spread over 32 loopback source addresses, as
  users come from many machines), which signs in (the first time: scrypt), opens sessions
  at a fixed rate (hellos per second, open loop), heartbeats each session every
  ``lease_timeout / 4`` seconds, and closes them.

Per rate: hello latency (p50, p99, max), heartbeat latency, the front door's CPU (a share
of one core, from /proc) and the message rates it took. First, every user's first sign-in
(the scrypt check, on the gate's threads). The machine's cores are shared by the three
processes: on a 2-core VM the latencies include waiting for a core. Prints a table, then
one JSON object (also ``--json``).
"""

from __future__ import annotations

import argparse
import heapq
import multiprocessing
import os
import platform
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import zmq  # noqa: E402

from gpu_backend.protocol import PROTOCOL_VERSION  # noqa: E402
from gpu_backend.protocol.codec import packb, unpackb  # noqa: E402
from json_out import emit  # noqa: E402  (beside this file)

#: loopback source addresses the clients spread over (the sign-in gate hashes one token
#: per source at a time, as it would per client machine)
SOURCES = 32
LEASE_TIMEOUT = 60.0


# ------------------------------------------------------------------ the front door process
def _door_main(users_file: str, usage_log: str, secrets_of: dict[str, str], conn) -> None:
    from gpu_backend.config import PoolSettings
    from gpu_backend.door.frontdoor import FrontDoor
    import threading
    door = FrontDoor(PoolSettings(listen="tcp://127.0.0.1:0", cluster="manual",
                                  users_file=users_file, usage_log=usage_log,
                                  lease_timeout=LEASE_TIMEOUT, same_host=False,
                                  max_sessions_per_device=64))
    door.cluster.agents.secrets.update(secrets_of)
    conn.send((door.address, door.cluster.agents.address))
    threading.Thread(target=lambda: (conn.recv(), door.stop()), daemon=True).start()
    if os.environ.get("CLUSTER_SCALE_PROFILE"):   # where the front door's time goes
        import cProfile
        cProfile.runctx("door.run()", globals(), {"door": door},
                        os.environ["CLUSTER_SCALE_PROFILE"])
    else:
        door.run()


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------ the simulated hosts
def _hosts_main(agents_address: str, secrets_of: dict[str, str], gpus: int, usage_every: float,
                conn) -> None:
    """Every host's agent in one loop: joins, answers spawns with ready, relays nothing
    else but usage reports of workers with a session, and ends workers told to stop."""
    ctx = zmq.Context()
    poller = zmq.Poller()
    agents = {}
    for name, secret in secrets_of.items():
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(agents_address)
        sock.send(packb({"t": "join", "host": name, "secret": secret, "address": "127.0.0.1",
                         "devices": [f"cuda:{k}" for k in range(gpus)], "pid": os.getpid()}))
        poller.register(sock, zmq.POLLIN)
        agents[sock] = name
    serving: dict[tuple, float] = {}   # (socket, worker id) -> next usage report due
    ops: dict[tuple, int] = {}
    sent = {"usage": 0, "load": 0, "ready": 0}
    port = 20000
    next_load = time.monotonic()
    stop = False
    while not stop:
        for sock, _ in poller.poll(5):
            while True:
                try:
                    msg = unpackb(sock.recv(zmq.NOBLOCK))
                except zmq.Again:
                    break
                kind = msg["t"]
                if kind == "spawn":
                    port += 1
                    sock.send(packb({"t": "worker", "w": msg["w"], "m": {
                        "t": "ready", "port": port, "ipc": None,
                        "info": {"kind": "cupy", "index": int(msg["device"][5:]),
                                 "name": "simulated", "memory_total": 80 << 30},
                        "runtime": {}, "lease": secrets.token_hex(8)}}))
                    sent["ready"] += 1
                elif kind == "tell" and msg["m"]["t"] == "assign":
                    serving[(sock, msg["w"])] = time.monotonic() + usage_every
                    ops[(sock, msg["w"])] = 0
                elif kind in ("end", "kill") or (kind == "tell" and msg["m"]["t"] == "stop"):
                    key = (sock, msg["w"])
                    serving.pop(key, None)
                    sock.send(packb({"t": "worker", "w": msg["w"], "m": {
                        "t": "ended", "reason": "closed by the client", "memory": 0,
                        "arrays": 0, "ops": ops.pop(key, 0)}}))
                    sock.send(packb({"t": "exited", "w": msg["w"], "code": 0}))
        now = time.monotonic()
        for key, due in list(serving.items()):
            if now >= due:
                sock, wid = key
                ops[key] += 100
                sock.send(packb({"t": "worker", "w": wid, "m": {
                    "t": "usage", "memory": 1 << 28, "arrays": 10, "device_s": ops[key] * 1e-4,
                    "ops": ops[key], "bytes_in": 0, "bytes_out": 0, "errors": 0, "oom": 0,
                    "peak": 1 << 28}}))
                serving[key] = now + usage_every
                sent["usage"] += 1
        if now >= next_load:
            next_load = now + 0.5
            for sock in agents:
                sock.send(packb({"t": "load", "arbiter": {}, "workers": 0}))
                sent["load"] += 1
        if conn.poll():
            request = conn.recv()
            if request == "stop":
                stop = True
            conn.send(dict(sent))
    ctx.destroy(0)


# ------------------------------------------------------------------ the clients
class Clients:
    """Client slots, each a DEALER of its own (one request at a time) signed in as one of
    the users (slot k as user k modulo their number), spread over loopback sources."""

    def __init__(self, door: str, tokens: dict[str, str], slots: int) -> None:
        self.ctx = zmq.Context()
        self.ctx.set(zmq.MAX_SOCKETS, slots + 64)   # (libzmq's default: 1023)
        self.poller = zmq.Poller()
        names = list(tokens)
        self.token_of = [tokens[names[k % len(names)]] for k in range(slots)]
        self.socks: list[zmq.Socket] = []
        self.slot_of: dict[zmq.Socket, int] = {}
        host, port = door[len("tcp://"):].rsplit(":", 1)
        for k in range(slots):
            sock = self.ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://127.0.0.{2 + k % SOURCES}:0;{host}:{port}")
            self.socks.append(sock)
            self.slot_of[sock] = k
        self.busy: dict[int, tuple[str, float]] = {}   # slot -> (request kind, sent at)
        self.sessions: dict[int, dict] = {}             # slot -> its hello's reply
        self.latency: dict[str, list[float]] = {"hello": [], "hb": [], "status": [], "close": []}
        self.errors: dict[str, int] = {}
        self.signed_in: set[int] = set()   # slots whose status request was answered ok
        self.opened: list[int] = []        # slots whose hello was answered, for the driver

    def send(self, slot: int, kind: str) -> None:
        msg: dict = {"t": kind}
        if kind in ("hello", "status"):
            msg["token"] = self.token_of[slot]
        if kind == "hello":
            msg.update(v=PROTOCOL_VERSION, user=f"slot{slot}@bench", label="cluster_scale")
        if kind in ("hb", "close"):
            msg.update(session=self.sessions[slot]["session"], key=self.sessions[slot]["key"])
        self.busy[slot] = (kind, time.perf_counter())
        self.socks[slot].send(packb(msg))
        # (only sockets awaiting a reply are polled: a poll over thousands costs the
        # client more than the front door's answer)
        self.poller.register(self.socks[slot], zmq.POLLIN)

    def receive(self, timeout_ms: int) -> None:
        for sock, _ in self.poller.poll(timeout_ms):
            reply = unpackb(sock.recv())
            self.poller.unregister(sock)
            slot = self.slot_of[sock]
            kind, sent = self.busy.pop(slot)
            self.latency[kind].append(time.perf_counter() - sent)
            if not reply.get("ok"):
                name = reply["error"][0]
                self.errors[name] = self.errors.get(name, 0) + 1
            elif kind == "status":
                self.signed_in.add(slot)
            elif kind == "hello":
                self.sessions[slot] = reply
                self.opened.append(slot)
            elif kind == "close":
                self.sessions.pop(slot, None)

    def close(self) -> None:
        self.ctx.destroy(0)


def _quantiles(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3  # noqa: E731
    return {"n": len(values), "p50_ms": statistics.median(ordered) * 1e3, "p99_ms": pick(0.99),
            "max_ms": ordered[-1] * 1e3}


def _sign_in_all(clients: Clients, users: int) -> dict:
    """Every user's first sign-in (a status request: the token's scrypt check), as many at
    once as the sign-in gate queues (auth_gate.QUEUE); one refused as busy tries again."""
    from gpu_backend.door.auth_gate import QUEUE
    waiting = list(range(users))
    refused = 0
    start = time.perf_counter()
    while waiting or clients.busy:
        while waiting and len(clients.busy) < QUEUE:
            clients.send(waiting.pop(), "status")
        before = sum(clients.errors.values())
        asked = set(clients.busy)
        clients.receive(50)
        if sum(clients.errors.values()) > before:   # (refused: which ones, by elimination)
            done = asked - set(clients.busy)
            retry = [slot for slot in done if slot not in clients.signed_in]
            refused += len(retry)
            waiting.extend(retry)
    seconds = time.perf_counter() - start
    clients.errors.clear()
    return {"users": users, "seconds": seconds, "per_second": users / seconds,
            "refused_busy_and_retried": refused, **_quantiles(clients.latency["status"])}


class Driver:
    """Open sessions at a fixed rate (open loop) while every open session heartbeats every
    ``lease_timeout / 4`` seconds; measures the front door meanwhile."""

    def __init__(self, clients: Clients, door_pid: int, hosts_conn) -> None:
        self.clients, self.door_pid, self.hosts_conn = clients, door_pid, hosts_conn
        self.beats: list[tuple[float, int]] = []   # (due, slot), a heap

    def _sent_by_hosts(self) -> dict:
        self.hosts_conn.send("count")
        return self.hosts_conn.recv()

    def run(self, slots: list[int], rate: float) -> dict:
        clients = self.clients
        for values in clients.latency.values():
            values.clear()
        clients.errors.clear()
        before, cpu0, t0 = self._sent_by_hosts(), _cpu_seconds(self.door_pid), time.perf_counter()
        interval, due, opened = 1.0 / rate, time.perf_counter(), 0
        while opened < len(slots) or any(k == "hello" for k, _ in clients.busy.values()):
            now = time.perf_counter()
            while opened < len(slots) and now >= due:
                clients.send(slots[opened], "hello")
                opened += 1
                due += interval
            while clients.opened:   # (sessions opened since: their first beat is due later)
                heapq.heappush(self.beats, (now + LEASE_TIMEOUT / 4, clients.opened.pop()))
            while self.beats and self.beats[0][0] <= now:
                _, slot = heapq.heappop(self.beats)
                if slot not in clients.sessions:
                    continue
                if slot not in clients.busy:
                    clients.send(slot, "hb")
                heapq.heappush(self.beats, (now + LEASE_TIMEOUT / 4, slot))
            clients.receive(max(0, min(5, int((due - time.perf_counter()) * 1000))))
        seconds = time.perf_counter() - t0
        cpu, after = _cpu_seconds(self.door_pid) - cpu0, self._sent_by_hosts()
        return {"rate": rate, "opened": len(slots), "seconds": seconds,
                "hellos_per_s": len(slots) / seconds, "sessions_open": len(clients.sessions),
                "hello": _quantiles(clients.latency["hello"]),
                "heartbeat": _quantiles(clients.latency["hb"]), "door_cpu": cpu / seconds,
                "usage_reports_per_s": (after["usage"] - before["usage"]) / seconds,
                "loads_per_s": (after["load"] - before["load"]) / seconds,
                "errors": dict(clients.errors)}

    def close(self, slots: list[int], rate: float) -> None:
        """Close *slots*' sessions at *rate* per second (not measured)."""
        clients = self.clients
        for slot in slots:
            while slot in clients.busy:
                clients.receive(5)
            if slot in clients.sessions:
                clients.send(slot, "close")
            clients.receive(0)
            time.sleep(1.0 / rate)
        deadline = time.monotonic() + 60
        while clients.busy and time.monotonic() < deadline:
            clients.receive(50)


def _write_users(path: Path, count: int) -> dict[str, str]:
    from gpu_backend.accounting.users import User, hash_token, new_token, save_users
    names = [f"user{k:04d}" for k in range(count)]
    tokens = {name: new_token(name) for name in names}
    with multiprocessing.get_context("spawn").Pool(os.cpu_count() or 1) as workers:
        hashes = workers.map(hash_token, [tokens[n] for n in names], chunksize=16)
    save_users(path, {n: User(name=n, token_hash=h) for n, h in zip(names, hashes)})
    return tokens


def measure(hosts: int, gpus: int, users: int, sessions: int, rates: list[float],
            seconds: float, fill_rate: float, usage_every: float) -> dict:
    where = Path(tempfile.mkdtemp(prefix="gpuwb-cluster-scale-"))
    tokens = _write_users(where / "users.toml", users)
    secrets_of = {f"host{k:03d}": secrets.token_urlsafe(16) for k in range(hosts)}
    spawn = multiprocessing.get_context("spawn")
    door_conn, door_end = spawn.Pipe()
    door = spawn.Process(target=_door_main, args=(str(where / "users.toml"),
                                                  str(where / "usage.jsonl"), secrets_of, door_end))
    door.start()
    address, agents_address = door_conn.recv()
    hosts_conn, hosts_end = spawn.Pipe()
    host_proc = spawn.Process(target=_hosts_main, args=(agents_address, secrets_of, gpus,
                                                        usage_every, hosts_end))
    host_proc.start()
    extra = max(int(rate * seconds) for rate in rates)
    clients = Clients(address, tokens, sessions + extra)
    try:
        sock, token = clients.socks[0], clients.token_of[0]
        deadline = time.monotonic() + 120
        while True:   # until every host has joined (the door's status names them)
            sock.send(packb({"t": "status", "token": token}))
            if not sock.poll(30_000):
                raise RuntimeError("the front door does not answer")
            if len(unpackb(sock.recv()).get("hosts") or []) == hosts:
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the hosts did not all join")
            time.sleep(0.2)
        sign_in = _sign_in_all(clients, min(users, sessions + extra))
        driver = Driver(clients, door.pid, hosts_conn)
        fill = driver.run(list(range(sessions)), fill_rate)
        phases = []
        for rate in rates:
            slots = list(range(sessions, sessions + int(rate * seconds)))
            phases.append(driver.run(slots, rate))
            driver.close(slots, max(rate, 50))
    finally:
        try:
            clients.close()
            hosts_conn.send("stop")
            hosts_conn.recv()
            host_proc.join(30)
            door_conn.send("stop")
            door.join(60)
        finally:
            shutil.rmtree(where, ignore_errors=True)   # (the users file and the usage log)
    return {"hosts": hosts, "gpus": gpus, "devices": hosts * gpus, "users": users,
            "sessions": sessions, "seconds_per_rate": seconds, "usage_every": usage_every,
            "lease_timeout": LEASE_TIMEOUT, "sign_in": sign_in, "fill": fill, "phases": phases}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per host")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=1000,
                        help="sessions opened first and kept open (one per user)")
    parser.add_argument("--fill-rate", type=float, default=50, help="hellos per second while "
                        "opening those")
    parser.add_argument("--rates", default="5,20,50,100",
                        help="then, hellos per second for --seconds each, beside them")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--usage-every", type=float, default=0.5,
                        help="seconds between a busy worker's usage reports")
    parser.add_argument("--json", help="also write the JSON result here")
    args = parser.parse_args(argv)
    rates = [float(r) for r in args.rates.split(",")]
    figures = measure(args.hosts, args.gpus, args.users, args.sessions, rates, args.seconds,
                      args.fill_rate, args.usage_every)
    s = figures["sign_in"]
    print(f"{args.hosts} hosts x {args.gpus} GPUs (simulated), {args.users} users; "
          f"{os.cpu_count()} cores shared by the front door, the hosts and the clients")
    print(f"first sign-in of {s['users']} users (scrypt): {s['per_second']:.0f}/s, "
          f"p50 {s['p50_ms']:.0f} ms, p99 {s['p99_ms']:.0f} ms")
    print(f"{'phase':<7} {'hellos/s':>8} {'open':>5} {'hello p50':>9} {'p99':>8} {'max':>8} "
          f"{'hb p99':>8} {'door CPU':>8} {'usage/s':>7} {'err':>4}")
    for name, p in [("fill", figures["fill"]), *[("+rate", p) for p in figures["phases"]]]:
        h, b = p["hello"], p["heartbeat"]
        print(f"{name:<7} {p['hellos_per_s']:>8.1f} {p['sessions_open']:>5} "
              f"{h.get('p50_ms', 0):>7.1f}ms {h.get('p99_ms', 0):>6.1f}ms "
              f"{h.get('max_ms', 0):>6.1f}ms {b.get('p99_ms', 0):>6.1f}ms "
              f"{100 * p['door_cpu']:>7.0f}% {p['usage_reports_per_s']:>7.0f} "
              f"{sum(p['errors'].values()):>4}")
    emit({"benchmark": "cluster_scale", "date": datetime.now(timezone.utc).isoformat(),
          "host": platform.node(), "cores": os.cpu_count(), **figures}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
