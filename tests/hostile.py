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

__all__ = ["worker_processes", "public_text", "addresses_in", "Impersonator", "unix_sockets",
           "flood_wrong_tokens"]

_ADDRESS = re.compile(r"(?:tcp|ipc)://[^\s\x00'\"]+")
#: what could be a ZeroMQ identity (a routing id may not begin with a zero byte)
_IDENTITY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/+-]{0,254}")


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def worker_processes(parent: int | None = None) -> dict[int, list[str]]:
    """The pool's worker processes on this host, by pid: their command lines (argv). With
    *parent*, only the children of that process."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if "gpu_backend.worker" not in argv:
            continue
        if parent is not None and _ppid(pid) != parent:
            continue
        found[pid] = argv
    return found


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


def flood_wrong_tokens(address: str, name: str, connections: int, seconds: float) -> dict:
    """Hellos with wrong tokens for user *name*, from *connections* connections each sending
    its next one as soon as the last is answered, for *seconds*: the sign-in flood. Returns
    how many were sent and answered, and the answers' error classes."""
    ctx = zmq.Context()
    socks = []
    answers: Counter = Counter()
    sent = 0
    try:
        def hello(sock: zmq.Socket) -> None:
            nonlocal sent
            token = f"{name}.{secrets.token_urlsafe(32)}"
            sock.send(packb({"t": "hello", "v": PROTOCOL_VERSION, "token": token, "user": "flood"}))
            sent += 1

        poller = zmq.Poller()
        for _ in range(connections):
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(address)
            poller.register(sock, zmq.POLLIN)
            socks.append(sock)
            hello(sock)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for sock, _ in poller.poll(50):
                reply = unpackb(sock.recv())
                answers[(reply.get("error") or ["ok"])[0] if isinstance(reply, dict) else "?"] += 1
                hello(sock)
    finally:
        ctx.destroy(linger=0)
    return {"sent": sent, "answered": sum(answers.values()), "answers": dict(answers)}


if __name__ == "__main__":   # python -m tests.hostile flood ADDRESS NAME CONNECTIONS SECONDS
    import json
    import sys
    if sys.argv[1:2] == ["flood"]:
        print(json.dumps(flood_wrong_tokens(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                            float(sys.argv[5]))))
