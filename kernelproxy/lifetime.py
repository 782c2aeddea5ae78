"""A session ends with the process that opened it.

A script that follows ``kernelproxy.connect(...)`` / ``install(session)`` and simply
exits used to leave its session to the pool's lease: its device memory and one of its
user's sessions stayed taken for ``lease_timeout`` (60 s), so the same script run again
under a quota of one session was refused. Every session is therefore closed when the
interpreter exits (``atexit``), as ``with kernelproxy.connect(...) as session:`` closes
it at the block's end. The registry holds sessions weakly: it never keeps one alive, and
one dropped without ``close()`` is released by its own finaliser (which closes its link:
its worker then ends it, gpu_backend.worker.presence). A process that cannot say goodbye
(SIGKILL) is noticed by its worker in the same way.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from typing import Any

__all__ = ["end_with_process", "EXIT_BUDGET"]

#: At exit, the time in which the process's sessions are closed one after another; each
#: of a close's waits for its pool is then a second at most (a pool answers in
#: milliseconds; one that is gone holds the exit for those waits). A session whose turn
#: comes after it is spent (its pool gone, or a daemon thread blocked in it) is let go
#: without a goodbye: its link closes with the process, and its worker ends it
#: (gpu_backend.worker.presence).
EXIT_BUDGET = 3.0

#: the open sessions, each with the process that opened it (a forked child must not close
#: its parent's sessions)
_open: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()
_registered = False
_guard = threading.Lock()


def end_with_process(session: Any) -> None:
    """Close *session* (a ``kernelproxy.Session``) when this process exits, if it is
    still open then. Called by ``Session.__init__``."""
    global _registered
    with _guard:
        _open[session] = os.getpid()
        if not _registered:
            atexit.register(_close_all)
            _registered = True


def _close_all() -> None:
    """At exit: close each session still open, so the pool frees it at once."""
    with _guard:
        sessions = [s for s, pid in _open.items() if pid == os.getpid()]
    deadline = time.monotonic() + EXIT_BUDGET
    for session in sessions:
        if session.closed:
            continue
        left = deadline - time.monotonic()
        if left <= 0 or not session._lock.acquire(timeout=left):
            # No goodbye: the link closes with the process, and the worker ends the session.
            # Nothing of it is closed here, nor by its finaliser at exit: the thread that
            # holds the session may be waiting on its sockets, and a socket closed under a
            # thread that uses it is one libzmq may answer with an abort.
            session.heartbeat.stop()
            session._release.atexit = False
            continue
        try:
            session.close(wait=min(left, 1.0))
        except Exception:   # exiting regardless; the worker sees the link close
            pass
        finally:
            session._lock.release()
