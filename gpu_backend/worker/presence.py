"""Whether a session's client is still there, as its worker's links can tell.

A client whose process ends without closing its session (killed, crashed, or a script
that never called ``close()``) used to keep its session, its device memory and one of its
user's sessions until the lease ran out (``lease_timeout``, 60 s by default). The kernel
closes a dead process's sockets, and the worker sees that:

- **Unix link** (a client on the pool's host): the client's connection reaches its end at
  once. A client's link never reconnects (``kernelproxy.links.UnixLink``), so once the
  connections that proved the session key are all closed, the client has gone.
- **ZeroMQ link** (``tcp://``): libzmq's socket monitor reports each connection the
  worker's ROUTER accepts (``EVENT_ACCEPTED``, its descriptor) and its end
  (``EVENT_DISCONNECTED``, the same descriptor): measured with libzmq 4.3.5 for a client
  that exits, one killed with SIGKILL, a refused handshake and a bare TCP connection. A
  DEALER reconnects by itself when its connection drops (100 ms later), so the client has
  gone only when no connection has been open for RECONNECT_GRACE.

Only once the client has proved the session key (a trusted Unix peer, or a batch with the
key over ZeroMQ) is its absence judged: a stranger who connects to the worker's port and
leaves cannot end the session, and one who stays connected only leaves it to its lease. A
host that vanishes without closing its connections is still ended by the lease.
"""

from __future__ import annotations

import itertools
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from .unix_listener import UnixListener, UnixPeer

__all__ = ["ClientPresence", "RECONNECT_GRACE", "CLIENT_GONE"]

#: A tcp client with no connection to its worker for this long has gone (a live one's
#: DEALER reconnects within 100 ms of a dropped connection).
RECONNECT_GRACE = 3.0
#: Why such a session ended (the pool's status and usage log say it).
CLIENT_GONE = "the client went away without closing the session"
_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED
_monitors = itertools.count()


class ClientPresence:
    """Watches the worker's links for its client; :meth:`gone` says when it has left."""

    def __init__(self, router: zmq.Socket, unix: UnixListener | None) -> None:
        self.router, self.unix = router, unix
        self.monitor = router.get_monitor_socket(
            _EVENTS, addr=f"inproc://gpuwb.worker.presence.{next(_monitors)}")
        self._open: set[int] = set()   # the ROUTER's connections, by descriptor
        #: how the client proved the session key: "unix", "tcp", or None (not yet)
        self.over: str | None = None
        self._alone_since: float | None = None

    def verified(self, ident: object) -> None:
        """A message with the session key came from *ident* (the server, on each batch
        until this is set): from now on the client's absence is judged, on that link."""
        self.over = "unix" if type(ident) is UnixPeer else "tcp"

    def _read_events(self) -> None:
        monitor = self.monitor
        while monitor.poll(0):
            event = recv_monitor_message(monitor)
            if event["event"] == zmq.EVENT_ACCEPTED:
                self._open.add(event["value"])
            else:
                self._open.discard(event["value"])

    def gone(self) -> bool:
        """Whether the client has left: never before it proved the key; over Unix, when
        its connections are closed; over ZeroMQ, after RECONNECT_GRACE with no connection."""
        self._read_events()
        over = self.over
        if over is None and self.unix is not None and self.unix.had_client:
            over = self.over = "unix"   # (a trusted peer proved the key with its first message)
        if over == "unix":
            return not self.unix.trusted_peers()
        if over != "tcp" or self._open:
            self._alone_since = None
            return False
        now = time.monotonic()
        if self._alone_since is None:
            self._alone_since = now
        return now - self._alone_since >= RECONNECT_GRACE

    def close(self) -> None:
        try:
            self.router.disable_monitor()
        except zmq.ZMQError:
            pass
        self.monitor.close(linger=0)
