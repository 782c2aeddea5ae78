"""What a hostile local user can do to a pool on its host: look at /proc, connect to what it finds.

Used by the attack tests. Everything here reads only what any local user may read
(another process's command line and, where permitted, its environment; the system's
table of Unix sockets) and connects where any local user could.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections import Counter

import zmq

from gpu_backend.protocol import PROTOCOL_VERSION
from gpu_backend.protocol.codec import packb, unpackb

__all__ = ["worker_processes", "command_line", "parent_pid", "process_state", "public_text", "addresses_in", "Impersonator", "unix_sockets",
           "flood_wrong_tokens", "flood_unique_names"]

_ADDRESS = re.compile(r"(?:tcp|ipc)://[^\s\x00'\"]+")
#: what could be a ZeroMQ identity (a routing id may not begin with a zero byte)
_IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/+-]{0,254}")


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (state, ppid, ...); [] if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def parent_pid(pid: int) -> int | None:
    """*pid*'s parent process id, or None once it is gone."""
    fields = _stat_fields(pid)
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


def process_state(pid: int) -> str | None:
    """The process's state letter ("R", "S", "Z", ...), or None once it is gone."""
    fields = _stat_fields(pid)
    return fields[0] if fields else None


def worker_processes(parent: int | None = None) -> dict[int, list[str]]:
    """The pool's worker processes on this host, by pid: their command lines (argv). With
    *parent*, only that pool's workers: its children, or its zygotes' children."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        argv = command_line(pid)
        if "gpu_backend.worker" not in argv:
            continue
        ppid = parent_pid(pid)
        if parent is not None and ppid != parent and not (
                ppid is not None and parent_pid(ppid) == parent
                and "gpu_backend.worker.zygote" in command_line(ppid)):
            continue
        found[pid] = argv
    return found


def command_line(pid: int) -> list[str]:
    """*pid*'s command line, split into words (a forked worker's retitled one is one string)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            data = f.read()
    except OSError:
        return []
    return data.replace(b"\0", b" ").decode(errors="replace").split()


def public_text(pid: int) -> str:
    """What another local user may learn of *pid* from /proc: its command line, and its
    environment where the system shows it (it does to the same user; the test is a
    stricter attacker than another user would be)."""
    parts = []
    for name in ("cmdline", "environ"):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                parts.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            pass
    return " ".join(parts)


def addresses_in(text: str) -> list[str]:
    """Every ZeroMQ address written in *text*."""
    return sorted(set(_ADDRESS.findall(text)))


def unix_sockets(under: str) -> list[str]:
    """The paths of the listening Unix sockets below the directory *under*, from the
    system's table that every local user may read (/proc/net/unix)."""
    found = []
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            fields = line.split()
            if len(fields) >= 8 and fields[7].startswith(under.rstrip("/") + "/"):
                found.append(fields[7])
    return sorted(set(found))


class Impersonator:
    """Connects to every address a worker's public text names, under every identity that
    text offers (each word of it), and says ``ready`` with a port of its own, as the worker
    would. :meth:`assigned` then says whether the pool handed it a session."""

    def __init__(self, text: str, port: int = 1) -> None:
        self.ctx = zmq.Context()
        self.port = port
        self.sockets: list[zmq.Socket] = []
        words = {w for w in re.split(r"[\s=]+", text) if _IDENTITY.fullmatch(w)}
        for address in addresses_in(text):
            for identity in sorted(words):
                sock = self.ctx.socket(zmq.DEALER)
                sock.setsockopt(zmq.LINGER, 0)
                sock.setsockopt(zmq.IDENTITY, identity.encode())
                sock.connect(address)
                self.sockets.append(sock)

    def say_ready(self) -> None:
        for sock in self.sockets:
            try:
                sock.send(packb({"t": "ready", "port": self.port, "ipc": None,
                                 "info": {"kind": "numpy", "index": 0, "name": "hijacked"},
                                 "runtime": {}}), zmq.NOBLOCK)
            except zmq.ZMQError:
                pass

    def assigned(self, seconds: float = 0.5) -> list[dict]:
        """The messages the pool sent to any of the impersonating sockets within *seconds*."""
        got = []
        deadline = time.monotonic() + seconds
        poller = zmq.Poller()
        for sock in self.sockets:
            poller.register(sock, zmq.POLLIN)
        while time.monotonic() < deadline:
            for sock, _ in poller.poll(50):
                try:
                    got.append(unpackb(sock.recv(zmq.NOBLOCK)))
                except Exception:   # anything at all counts as the pool talking to us
                    got.append({"raw": True})
        return got

    def close(self) -> None:
        self.ctx.destroy(linger=0)


def flood_wrong_tokens(address: str, name: str, connections: int, seconds: float,
                       open_loop: bool = False) -> dict:
    """Hellos with wrong tokens for user *name* from *connections* connections for *seconds*:
    the sign-in flood. Closed loop (the default), each connection sends its next hello when
    the last is answered; *open_loop*, each sends as fast as ZeroMQ takes them (up to its
    high-water mark) without waiting for answers. Returns how many were sent and answered,
    and the answers' error classes."""
    ctx = zmq.Context()
    answers: Counter = Counter()
    sent = 0
    try:
        def hello(sock: zmq.Socket) -> bool:
            nonlocal sent
            token = f"{name}.{secrets.token_urlsafe(32)}"
            try:
                sock.send(packb({"t": "hello", "v": PROTOCOL_VERSION, "token": token,
                                 "user": "flood"}), zmq.NOBLOCK)
            except zmq.Again:
                return False
            sent += 1
            return True

        def take(sock: zmq.Socket) -> None:
            reply = unpackb(sock.recv())
            answers[(reply.get("error") or ["ok"])[0] if isinstance(reply, dict) else "?"] += 1

        poller, socks = _dealers(ctx, address, connections)
        for sock in socks:
            hello(sock)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if open_loop:
                for sock in socks:
                    for _ in range(64):
                        if not hello(sock):
                            break
                    while sock.poll(0):
                        take(sock)
                continue
            for sock, _ in poller.poll(50):
                take(sock)
                hello(sock)
    finally:
        ctx.destroy(linger=0)
    return {"sent": sent, "answered": sum(answers.values()), "answers": dict(answers)}


def _dealers(ctx: zmq.Context, address: str, connections: int) -> tuple[zmq.Poller, list]:
    """*connections* DEALERs connected to *address*, and a poller for their replies."""
    poller = zmq.Poller()
    socks = []
    for _ in range(connections):
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(address)
        poller.register(sock, zmq.POLLIN)
        socks.append(sock)
    return poller, socks


def flood_unique_names(address: str, count: int, connections: int = 32, in_flight: int = 400,
                       timeout: float = 60.0) -> dict:
    """*count* hellos, each with a name no one has used before and a wrong token, dealt to
    *connections* connections that keep *in_flight* hellos outstanding each: whatever the
    front door keeps per name (or per request) grows with *count*. More are outstanding in
    all (12 800) than the tarpit holds, so the rest are answered at once and the flood goes
    at the door's pace. *in_flight* stays under ZeroMQ's high-water mark (1 000 replies a
    connection) even as the door's side sees it, up to 500 late: the door need drop no
    reply, and every hello must be answered.
    Returns how many were sent and answered, the answers' error classes, the seconds it
    took, and how many were still unanswered when *timeout* seconds passed without a reply
    (0 when all were)."""
    ctx = zmq.Context()
    answers: Counter = Counter()
    poller, socks = _dealers(ctx, address, connections)
    outstanding = dict.fromkeys(socks, 0)
    sent = answered = 0
    wrong = "x" * 43   # (the size of a real token's secret)
    started = time.monotonic()

    def top_up(sock: zmq.Socket) -> None:
        nonlocal sent
        while sent < count and outstanding[sock] < in_flight:
            sock.send(packb({"t": "hello", "v": PROTOCOL_VERSION, "token": f"n{sent}.{wrong}",
                             "user": "flood"}))
            sent += 1
            outstanding[sock] += 1

    try:
        for sock in socks:
            top_up(sock)
        while answered < count:
            events = poller.poll(int(timeout * 1000))
            if not events:
                break
            for sock, _ in events:
                while sock.poll(0):
                    reply = unpackb(sock.recv())
                    error = reply.get("error") if isinstance(reply, dict) else ["?"]
                    answers[(error or ["ok"])[0]] += 1
                    answered += 1
                    outstanding[sock] -= 1
                top_up(sock)
    finally:
        ctx.destroy(linger=0)
    return {"sent": sent, "answered": answered, "answers": dict(answers),
            "seconds": round(time.monotonic() - started, 2), "unanswered": sent - answered}


if __name__ == "__main__":
    # python -m tests.hostile flood ADDRESS NAME CONNECTIONS SECONDS [open]
    # python -m tests.hostile names ADDRESS COUNT [CONNECTIONS [IN_FLIGHT]]
    import json
    import sys
    if sys.argv[1:2] == ["flood"]:
        print(json.dumps(flood_wrong_tokens(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                            float(sys.argv[5]), open_loop=sys.argv[6:7] == ["open"])))
    elif sys.argv[1:2] == ["names"]:
        print(json.dumps(flood_unique_names(sys.argv[2], int(sys.argv[3]),
                                            *(int(a) for a in sys.argv[4:6]))), flush=True)


# ------------------------------------------------------------------ fuzzing

def door_fuzz_frames(seed: int, count: int) -> list[list[bytes]]:
    """*count* messages for the front door, seeded: random bytes, random msgpack values,
    and real requests (hello, hb, status, close, ping) with fields mutated."""
    import random
    from gpu_backend.protocol.codec import packb as pack
    rnd = random.Random(seed)
    values = [None, True, 0, -1, 2**63, 1.5, float("nan"), "", "x" * 300, b"\0" * 40, [], {},
              [1, [2, [3]]], {"t": "hello"}, PROTOCOL_VERSION, "alice." + "A" * 43]
    kinds = ["hello", "hb", "status", "close", "ping", "", None, 7, "hello\0"]
    fields = ["t", "v", "token", "session", "key", "user", "memory_limit", "apart_from", "history"]
    frames = []
    for _ in range(count):
        roll = rnd.random()
        if roll < 0.25:
            frames.append([rnd.randbytes(rnd.choice([0, 1, 2, 5, 17, 200, 3000]))])
        elif roll < 0.35:   # not one frame
            frames.append([rnd.randbytes(4), rnd.randbytes(4)][:rnd.choice([2])])
        else:
            msg = {"t": rnd.choice(kinds)}
            for field in rnd.sample(fields, rnd.randint(0, 4)):
                msg[field] = rnd.choice(values)
            data = pack(msg)
            if roll > 0.9 and data:   # a valid message with one byte changed
                at = rnd.randrange(len(data))
                data = data[:at] + bytes([rnd.randrange(256)]) + data[at + 1:]
            frames.append([data])
    return frames


def worker_fuzz_batches(seed: int, count: int, key: bytes, first_handle: int = 10**7) -> list[list[bytes]]:
    """*count* batches for a session's worker, with its *key*, seeded: each acknowledges any
    earlier error (so every one runs) and holds one to three ops, or garbage in their place.
    Ops name allow-listed functions, methods and operators (and names that are not), on
    small arrays the batch makes first, with arguments from a pool of awkward values."""
    import random
    from gpu_backend.protocol import api, codec
    from gpu_backend.protocol import messages as m
    rnd = random.Random(seed)
    pack = codec.make_packer().pack
    names = {m.KIND_FUNCTION: sorted(api.FUNCTIONS), m.KIND_METHOD: sorted(api.METHODS),
             m.KIND_OPERATOR: sorted(api.OPERATORS), m.KIND_ATTRIBUTE: sorted(api.ATTRIBUTES)}
    awkward = [0, 1, 2, -1, 3, 1.5, -0.0, float("inf"), float("nan"), True, None, "",
               "C", "ij", "float32", "int8", "complex128", [], [0, 1], [[1, 2], [3]], (2, 3),
               10**12, -(10**12), 2**63 - 1, slice(None, None, -1), slice(0, 10**12, 3), ...,
               "bfloat16", 1j]
    handle = first_handle
    batches = []
    for number in range(1, count + 1):
        records, seq = [], number * 10
        base = handle = handle + 4
        records.append(pack([seq, m.KIND_FUNCTION, api.ARRAY, base, "arange"]) +
                       pack([None, [rnd.choice([0, 1, 6, 24, 60])], {"dtype": rnd.choice(
                           ["float64", "int32", "bool", "complex64", "uint8"])}]))
        for i in range(rnd.randint(1, 3)):
            seq += 1
            kind = rnd.choice([m.KIND_FUNCTION, m.KIND_FUNCTION, m.KIND_METHOD, m.KIND_OPERATOR,
                               m.KIND_ATTRIBUTE, "z"])
            name = rnd.choice(names.get(kind) or ["nope"]) if rnd.random() < 0.95 else "os.system"
            operand = codec.Handle(base)
            args = [operand] if kind in (m.KIND_OPERATOR,) else []
            args += [rnd.choice(awkward) for _ in range(rnd.randint(0, 3))]
            kwargs = {rnd.choice(["axis", "dtype", "out", "order", "keepdims", "n"]): rnd.choice(awkward)
                      for _ in range(rnd.randint(0, 1))}
            target = operand if kind in (m.KIND_METHOD, m.KIND_ATTRIBUTE) else None
            try:
                body = pack([target, args, kwargs])
            except (TypeError, ValueError, OverflowError):
                body = pack([target, [], {}])
            record = pack([seq, kind, rnd.choice([api.ARRAY, api.VALUE, api.NONE]), base + 1 + i,
                           name]) + body
            if rnd.random() < 0.05:   # a record cut short, or a byte changed
                at = rnd.randrange(len(record))
                record = record[:at] if rnd.random() < 0.5 else \
                    record[:at] + bytes([rnd.randrange(256)]) + record[at + 1:]
            records.append(record)
        for h in range(base, base + 4):   # the batch's arrays are dropped at its end
            records.append(pack(h))
        header = codec.packb({"k": key, "b": 10**6 + number, "n": len(records), "r": 2**64 - 1})
        batches.append([header + b"".join(records)])
    return batches
