"""Pool addresses: ``tcp://HOST:PORT``, with IPv6 hosts in brackets (``tcp://[::1]:5555``).

libzmq speaks IPv6 only on sockets that ask for it (``ZMQ_IPV6``): each socket that binds
or connects to an address with a bracketed host is set up here before it does so.
"""

from __future__ import annotations

import re

import zmq

__all__ = ["TCP_ADDRESS", "is_ipv6", "allow_ipv6"]

#: ``tcp://HOST:PORT``: a host name, an IPv4 address, ``*``, or an IPv6 address in brackets
TCP_ADDRESS = re.compile(r"tcp://(\[[0-9A-Fa-f:.]+\]|[^:\[\]/\s]+):([0-9]{1,5})")


def is_ipv6(address: str) -> bool:
    """Whether *address* (``tcp://HOST[:PORT]``, or a bare host) names an IPv6 host."""
    host = address[len("tcp://"):] if address.startswith("tcp://") else address
    return host.startswith("[")


def allow_ipv6(sock: zmq.Socket, address: str) -> None:
    """Let *sock* bind or connect to *address* if its host is IPv6 (before it does)."""
    if is_ipv6(address):
        sock.setsockopt(zmq.IPV6, 1)
