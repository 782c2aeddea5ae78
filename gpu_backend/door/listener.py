"""The front door's TCP listening socket, held by the pool itself so that a restart keeps
its port.

``gpuwb-backend restart`` parks the sessions and execs the serving command again
(restarts.py, cli.py). Were the listening socket closed before the exec, its port would be
free for the second or two the new interpreter takes to start, and on a busy host anything
may take it meanwhile (another program's listener, a connection's ephemeral port: ports the
kernel hands out lie in the same range). The restarted pool then fails with "Address
already in use" and its parked sessions never come back; CI saw it happen.

So the pool opens the socket itself (as libzmq would: ``SO_REUSEADDR``, dual-stack IPv6,
its backlog), gives libzmq a duplicate of it through ``ZMQ_USE_FD`` and keeps the original.
libzmq closes its duplicate with its socket; the original outlives the door's context and
is passed across the exec (:meth:`KeptListener.pass_on`: the descriptor made inheritable,
its number in ``GPUWB_LISTEN_FD``). The restarted pool takes it back
(:func:`bind_clients`), so the port is never free, and clients who connect meanwhile wait
in the socket's backlog instead of being refused.

A host that is not an address or a name the resolver knows (libzmq also binds to an
interface's name, such as ``eth0``) is bound by libzmq alone, as before: such a pool's
restart may still lose its port.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket

import zmq

__all__ = ["LISTEN_FD_ENV", "KeptListener", "bind_clients"]

log = logging.getLogger(__name__)

#: the environment variable that carries the listening socket's descriptor across an exec
LISTEN_FD_ENV = "GPUWB_LISTEN_FD"
#: the listen backlog, libzmq's default (``ZMQ_BACKLOG``)
BACKLOG = 100


class KeptListener:
    """A listening TCP socket the pool holds beside the libzmq socket that serves it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def hand_to(self, clients: zmq.Socket, host: str) -> None:
        """Bind *clients* (a ROUTER) to this socket: libzmq serves a duplicate of it."""
        given = os.dup(self.sock.fileno())
        clients.setsockopt(zmq.USE_FD, given)
        try:
            clients.bind(f"tcp://{host}:{self.port}")
        except BaseException:   # (libzmq owns the duplicate only once bound)
            os.close(given)
            raise
        finally:   # (the option stays on the socket: a later ipc bind would take it too)
            clients.setsockopt(zmq.USE_FD, -1)

    def pass_on(self) -> None:
        """Let the socket survive this process's exec, for the pool that starts next."""
        os.set_inheritable(self.sock.fileno(), True)
        os.environ[LISTEN_FD_ENV] = str(self.sock.fileno())

    def close(self) -> None:
        self.sock.close()


def bind_clients(clients: zmq.Socket, host: str, port: int) -> tuple[int, KeptListener | None]:
    """Bind the door's *clients* socket to ``tcp://host:port`` (*port* 0: one the kernel
    picks) through a socket the pool keeps: the one the last pool passed on, if it listens
    where asked, else a new one. Returns the port bound and the kept socket, or None where
    libzmq bound alone (a host the resolver does not know)."""
    family_and_address = _resolve(host, port, ipv6=clients.getsockopt(zmq.IPV6) == 1)
    if family_and_address is None:
        if port == 0:
            return clients.bind_to_random_port(f"tcp://{host}"), None
        clients.bind(f"tcp://{host}:{port}")
        return port, None
    family, address = family_and_address
    listener = _inherited(family, address) or _opened(family, address)
    try:
        listener.hand_to(clients, host)
    except BaseException:
        listener.close()
        raise
    return listener.port, listener


def _resolve(host: str, port: int, *, ipv6: bool) -> tuple[int, tuple] | None:
    """The address family and socket address libzmq would bind *host* to, or None."""
    if host == "*":
        return ((socket.AF_INET6, ("::", port, 0, 0)) if ipv6
                else (socket.AF_INET, ("0.0.0.0", port)))
    if host.startswith("["):
        return socket.AF_INET6, (host[1:-1], port, 0, 0)
    try:
        found = socket.getaddrinfo(host, port, socket.AF_INET6 if ipv6 else socket.AF_INET,
                                   socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except (OSError, UnicodeError):   # (an interface's name: libzmq's to bind)
        return None
    family, _type, _proto, _name, address = found[0]
    return family, address


def _opened(family: int, address: tuple) -> KeptListener:
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:   # (libzmq's IPv6 sockets take IPv4 peers too)
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return KeptListener(sock)


def _inherited(family: int, address: tuple) -> KeptListener | None:
    """The listening socket the last pool passed on, where it listens at *address* (port
    0: any port); the variable is read once, and a socket that does not match is closed."""
    given = os.environ.pop(LISTEN_FD_ENV, None)
    if given is None:
        return None
    try:
        number = int(given)
        # (only a descriptor that crossed an exec is inheritable: pass_on made it so, and
        # every other of the process's is close-on-exec. A number left in the environment
        # of a process that did not exec names whatever holds it now: not ours to close)
        if not os.get_inheritable(number):
            raise ValueError("not passed across an exec")
        sock = socket.socket(fileno=number)
    except (ValueError, OSError):
        log.warning("%s=%s is not a socket this process holds: a new one is opened",
                    LISTEN_FD_ENV, given)
        return None
    os.set_inheritable(sock.fileno(), False)   # (the pool's own children never hold it)
    if _listens_at(sock, family, address):
        return KeptListener(sock)
    log.warning("the socket passed in %s does not listen at %s: a new one is opened",
                LISTEN_FD_ENV, address)
    sock.close()
    return None


def _listens_at(sock: socket.socket, family: int, address: tuple) -> bool:
    try:
        if (sock.family != family or sock.type != socket.SOCK_STREAM
                or not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)):
            return False
        bound = sock.getsockname()
    except OSError:
        return False
    if address[1] not in (0, bound[1]):
        return False
    return ipaddress.ip_address(bound[0]) == ipaddress.ip_address(address[0])
