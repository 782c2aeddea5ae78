"""The pool's private run directory: the files its own processes share, and nobody else.

The arbiter's socket, the hand-over baton and the spin-slot lock file are for the pool
and its workers only. They live in one directory per pool, mode 0700, so no other local
user can connect to the arbiter or map the baton. The directory records which process
made it (its pid and start time): a pool that stops removes it; the workers of a pool
that was killed remove it as they end (they see their control channel hang up); and a
pool starting sweeps any left by a dead pool of the same user, so that nothing piles up
in the temporary directory however pools end. The same-host sockets' directory
(:mod:`gpu_backend.door.same_host`, named by the pool's address so that a restarted pool keeps
it) carries an owner file too and is swept the same way.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile

__all__ = ["make_run_dir", "remove_run_dir", "sweep_stale_run_dirs", "mark_owner", "owner_alive", "PREFIX",
           "SWEPT_PREFIXES"]

log = logging.getLogger("gpu_backend.runtime.run_dir")

PREFIX = "gpuwb-run-"
#: the directories a pool makes in the temporary directory (its run directory, and its
#: same-host sockets' directory, gpu_backend.door.same_host), each with an owner file
SWEPT_PREFIXES = (PREFIX, "gpuwb-pool-")
_OWNER = "owner"


def _start_time(pid: int) -> str | None:
    """The start time of process *pid* (clock ticks since boot), or None if it is gone (a
    zombie, killed and not yet collected, is gone). A pid can be reused; pid and start time
    together name one process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if len(fields) < 20 or fields[0] == "Z":
        return None
    return fields[19]


def _base() -> str:
    return "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()


def make_run_dir() -> str:
    """A new run directory (0700) for this process's pool, after sweeping stale ones."""
    sweep_stale_run_dirs()
    path = tempfile.mkdtemp(prefix=PREFIX, dir=_base())
    mark_owner(path)
    return path


def mark_owner(path: str) -> None:
    """Record this process as the owner of the pool directory *path* (for the sweep)."""
    with open(os.path.join(path, _OWNER), "w") as f:
        f.write(f"{os.getpid()} {_start_time(os.getpid()) or '?'}\n")


def remove_run_dir(path: str | None) -> None:
    """Remove a pool's directory (never anything else: its name and owner file are checked)."""
    if path and os.path.basename(path).startswith(SWEPT_PREFIXES) and \
            os.path.exists(os.path.join(path, _OWNER)):
        shutil.rmtree(path, ignore_errors=True)


def owner_alive(path: str) -> bool:
    """Whether the pool that made the directory *path* still runs (unknown, or no owner
    file, as in the directories of older versions: yes)."""
    if _start_time(os.getpid()) is None:   # no /proc: no way to tell, so never sweep
        return True
    try:
        with open(os.path.join(path, _OWNER)) as f:
            pid_text, started = f.read().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return True
    now = _start_time(pid)
    return now is not None and (started == "?" or now == started)


def sweep_stale_run_dirs() -> int:
    """Remove the directories of this user's pools that no longer run; how many."""
    base, removed = _base(), 0
    try:
        names = os.listdir(base)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(SWEPT_PREFIXES):
            continue
        path = os.path.join(base, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if info.st_uid != os.getuid() or not os.path.isdir(path) or os.path.islink(path):
            continue
        if not owner_alive(path):
            remove_run_dir(path)
            removed += 1
    if removed:
        log.info("removed %d run directories of pools that no longer run", removed)
    return removed
