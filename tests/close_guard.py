"""In the suite's processes, ``os.close`` refuses a descriptor that is not its caller's.

A descriptor closed twice closes whatever number another thread opened since. libzmq's
mailbox eventfds and epoll descriptors are such numbers, and libzmq aborts the process
when it next uses one (a run in five or so, 2026-11-30: see docs/architecture.md,
"Contexts and descriptors"); a pool's listening socket was another (its own close then
failed with EBADF, and its workers took the pool for gone). So ``os.close`` raises
``AssertionError`` where the number is, right now:

- an eventfd or an epoll descriptor: nothing of ours or of the libraries the suite runs
  closes one with ``os.close``, so it is libzmq's;
- the descriptor of a live Python ``socket.socket``: that object closes its own, and a raw
  close of its number is a stale integer from elsewhere.

``os.dup2`` refuses such a number as its target too: it closes what the number held first.
And a socket object made over a number a live socket object holds already
(``socket.socket(fileno=n)``) raises: its close would close the other's descriptor through
the socket module, which neither check above nor tests/fd_owner_shim.c can tell from a
close of its own (a stray closer still unfound, 2026-11-30, closed a worker channel's
number under it so).
(A test of this suite handed a number it had just seen free to a pipe with ``dup2``; a pool's
thread had opened a worker's channel on it meanwhile, about one run in five.)

Either raises in the code that made the stray close, with its traceback, instead of an
abort or a lost socket later elsewhere."""

from __future__ import annotations

import os
import socket
import sys
import threading
import weakref

_close = os.close
_dup2 = os.dup2
_init = socket.socket.__init__

#: Python sockets by the descriptor each had when made (checked at use: a socket closed,
#: detached or collected since holds it no longer)
_sockets: dict[int, weakref.ref] = {}
_lock = threading.Lock()


def _guarded_close(fd: int) -> None:
    _refuse(fd, f"os.close({fd})")
    _close(fd)


def _guarded_dup2(fd: int, fd2: int, inheritable: bool = True) -> int:
    _refuse(fd2, f"os.dup2({fd}, {fd2})")
    return _dup2(fd, fd2, inheritable)


def _refuse(fd: object, call: str) -> None:
    """AssertionError where closing *fd* would close a descriptor that is not the caller's."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except (OSError, TypeError, ValueError):
        target = ""
    if target.startswith(("anon_inode:[eventfd]", "anon_inode:[eventpoll]")):
        raise AssertionError(f"{call} of {target}: not this code's descriptor (libzmq's, "
                             "most likely): a descriptor closed twice")
    if _held_by_a_socket(fd):
        raise AssertionError(f"{call} of {target}, which a live socket object holds: "
                             "a descriptor closed twice")


def _held_by_a_socket(fd: object) -> bool:
    with _lock:
        ref = _sockets.get(fd) if type(fd) is int else None
    sock = ref() if ref is not None else None
    return sock is not None and _socket_fd(sock) == fd


def _registering_init(self, *args, **kwargs) -> None:
    _init(self, *args, **kwargs)
    fd = _socket_fd(self)
    if fd >= 0:
        # (a second object over a live one's descriptor; ssl's wrap_socket makes its
        # SSLSocket so and detaches the first at once)
        if _held_by_a_socket(fd) and type(self).__name__ != "SSLSocket":
            socket.socket.detach(self)   # (this one closes nothing as it goes)
            message = (f"a socket object made over descriptor {fd}, which a live socket "
                       "object holds: the two would close it twice")
            _tell(message)
            raise AssertionError(message)
        with _lock:
            _sockets[fd] = weakref.ref(self)


def _tell(message: str) -> None:
    """*message* and the stack that made it, on the process's real standard error: a
    thread that swallows the AssertionError (a pool's thread) leaves this in the log."""
    import traceback
    try:
        sys.__stderr__.write(f"close_guard: {message}\n" + "".join(traceback.format_stack()))
        sys.__stderr__.flush()
    except Exception:
        pass


def _socket_fd(sock: socket.socket) -> int:
    try:
        return socket.socket.fileno(sock)
    except (OSError, ValueError):
        return -1


def install() -> None:
    os.close = _guarded_close
    os.dup2 = _guarded_dup2
    socket.socket.__init__ = _registering_init
