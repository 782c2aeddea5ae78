"""In the suite's processes, ``os.close`` refuses a descriptor that is libzmq's own.

A descriptor closed twice closes whatever number another thread opened since; libzmq's
mailbox eventfds and epoll descriptors are such numbers, and libzmq aborts the process
when it next uses one (a run in five or so, 2026-11-30: see docs/architecture.md,
"Contexts and descriptors"). Nothing of ours or of the libraries the suite runs closes
an eventfd or an epoll descriptor with ``os.close``, so one that does is the stray
close: it raises here, in the code that made it, instead of an abort later elsewhere."""

from __future__ import annotations

import os

_close = os.close


def _guarded_close(fd: int) -> None:
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except (OSError, TypeError, ValueError):
        target = ""
    if target.startswith(("anon_inode:[eventfd]", "anon_inode:[eventpoll]")):
        raise AssertionError(f"os.close({fd}) of {target}: not this code's descriptor (libzmq's, "
                             "most likely): a descriptor closed twice")
    _close(fd)


def install() -> None:
    os.close = _guarded_close
