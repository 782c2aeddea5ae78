"""The private channel between the pool and one of its workers: an inherited socket pair.

The pool tells a worker its session (the session key among it), grants it memory and
stops it; the worker reports ``ready``, its usage and its end. Whoever can speak on this
channel as a worker is handed the next user's session, so the channel must admit the
pool's own child and nobody else. A ZeroMQ socket on a loopback port, with the worker's
id as its identity, admitted anyone who read the worker's command line in /proc and
connected first. Here the pool makes a Unix socket pair for each worker it spawns and
the worker inherits one end as a file descriptor (``subprocess``'s ``pass_fds``): no
address, no name, no secret on a command line or in an environment. Nobody else can
connect to a socket pair, so every message that comes out of it is the worker's.

The same pair tells each side that the other has gone, at once: a worker whose pool
died (killed, even by SIGKILL) sees the pair hang up, and a pool sees a dead worker's
end close before its exit status is collected.

``SOCK_SEQPACKET``: one message is one record (a msgpack map), read whole or not at
all, so a reader never holds half a message.
"""

from __future__ import annotations

import select
import socket
from typing import Any

from ..protocol.codec import packb, unpackb

__all__ = ["ControlChannel", "ControlClosed", "MAX_MESSAGE_BYTES"]

#: The largest message either side sends (a worker's ``ready`` with its device's
#: properties is a few kilobytes); larger ones are refused by the sender.
MAX_MESSAGE_BYTES = 1 << 20


class ControlClosed(ConnectionError):
    """The other side of the channel has gone (its process ended or closed it)."""


class ControlChannel:
    """One end of a pool-worker channel. The pool's end never blocks (:meth:`send` raises
    :class:`BlockingIOError` if the worker stopped reading); the worker's end blocks up to
    *send_timeout* seconds."""

    def __init__(self, sock: socket.socket, send_timeout: float | None = None) -> None:
        self.sock = sock
        self.send_timeout = send_timeout
        sock.setblocking(False)   # waits are polls of our own: a read never blocks
        for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, option, 2 * MAX_MESSAGE_BYTES)
            except OSError:
                pass

    @classmethod
    def pair(cls) -> tuple["ControlChannel", socket.socket]:
        """The pool's end and the socket whose descriptor the worker inherits."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        theirs.set_inheritable(True)
        return cls(ours), theirs

    @classmethod
    def inherited(cls, fd: int, send_timeout: float = 10.0) -> "ControlChannel":
        """The worker's end, from the descriptor it was started with."""
        return cls(socket.socket(fileno=fd), send_timeout)

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, msg: dict) -> None:
        """Send one message; :class:`ControlClosed` if the other side has gone."""
        data = packb(msg)
        if len(data) > MAX_MESSAGE_BYTES:
            raise ValueError(f"a control message of {len(data)} bytes (at most {MAX_MESSAGE_BYTES})")
        while True:
            try:
                self.sock.send(data)
                return
            except BlockingIOError:
                if self.send_timeout is None or not self._writable(self.send_timeout):
                    raise
            except (BrokenPipeError, ConnectionResetError, ConnectionRefusedError) as exc:
                raise ControlClosed(f"the other side of the control channel has gone ({exc})") from None

    def _writable(self, timeout: float) -> bool:
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLOUT)
        return bool(poller.poll(int(timeout * 1000)))

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Whether a message (or the other side's hang-up) is waiting, within *timeout* seconds."""
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN)
        return bool(poller.poll(None if timeout is None else max(0, int(timeout * 1000))))

    def recv(self) -> Any | None:
        """The next message, or None if none is waiting; :class:`ControlClosed` at the other
        side's end. A message that does not decode is returned as None (and dropped)."""
        for attempt in range(2):
            try:
                data, _ancillary, flags, _address = self.sock.recvmsg(MAX_MESSAGE_BYTES, 0,
                                                                       socket.MSG_DONTWAIT)
                break
            except (BlockingIOError, InterruptedError):
                return None
            except ConnectionResetError as exc:
                # Linux: a peer that closed with messages of ours unread makes the next read
                # fail once with ECONNRESET, ahead of the records it sent before closing
                # (its last words: a worker's "ended"). The error is cleared: read on.
                if attempt:
                    raise ControlClosed(f"the control channel broke ({exc})") from None
            except OSError as exc:
                raise ControlClosed(f"the control channel broke ({exc})") from None
        if not data:
            raise ControlClosed("the other side closed the control channel")
        if flags & socket.MSG_TRUNC:
            return None
        try:
            return unpackb(data)
        except ValueError:
            return None

    def hung_up(self, timeout: float | None = 0.0) -> bool:
        """Whether the other side has gone, waiting up to *timeout* seconds (None: for ever)
        without reading anything (a watchdog thread may ask while the owner reads)."""
        poller = select.poll()
        poller.register(self.sock.fileno(), 0)   # POLLHUP and POLLERR are always reported
        events = poller.poll(None if timeout is None else max(0, int(timeout * 1000)))
        return any(mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _fd, mask in events)

    def gone(self) -> bool:
        """Whether the other side has gone or this end is closed (never waits)."""
        return self.sock.fileno() < 0 or self.hung_up(0)

    def close(self) -> None:
        self.sock.close()
