"""Ports for tests whose pool must bind the same port again after it stopped (a restart).

A port from ``bind(("127.0.0.1", 0))`` lies in the kernel's ephemeral range, the one it
also hands out to every outgoing connection and every other ``bind(0)``: once the first
pool has let it go, another test's connection or pool may take it before the next pool
binds it, and that pool fails with "Address already in use". A port below that range is
never handed out by the kernel; only a test choosing the same way could take it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: Linux's own default, where /proc does not say
EPHEMERAL_LOW = 32768
#: the lowest port chosen (above the well-known and most services' ports)
LOWEST = 20000


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return EPHEMERAL_LOW


def port_the_kernel_hands_no_one(host: str = "127.0.0.1") -> int:
    """A free port below the kernel's ephemeral range (any free port, where that range
    leaves no room below it)."""
    top = _ephemeral_low()
    for _ in range(200):
        port = random.randrange(LOWEST, top) if top > LOWEST + 100 else 0
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise RuntimeError("no free port below the kernel's ephemeral range")
