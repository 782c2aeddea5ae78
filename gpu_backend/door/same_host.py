"""Same-host endpoints: the pool's front door on ``ipc://``, its workers on Unix sockets.

A client on the pool's own host (the embedded pool of a notebook kernel, a
kernel started on the pool host) reaches the pool's front door over ZeroMQ's
``ipc://`` and its session worker over a plain Unix-domain socket (see
:mod:`gpu_backend.protocol.framing` for why not ZeroMQ there), instead of
loopback TCP. The client chooses it simply by the address it is given
(``ipc://...`` instead of ``tcp://...``); remote clients keep ``tcp://``.

The sockets live in one directory per pool, made here and removed when the
pool stops. The directory is searchable but not listable by other local users
(0711) and the sockets are open to them (0666), as loopback TCP is: every
request still carries the token or the session key, and a worker's socket has
an unguessable name that only its session's hello reply tells. The ipc door
shares the front door's ZeroMQ socket, and so its security (plain or CURVE).
"""

from __future__ import annotations

import os
import shutil
import tempfile

import zmq

from gpu_backend.runtime.run_dir import mark_owner

__all__ = ["available", "make_dir", "bind", "remove_dir"]


def available() -> bool:
    """Whether this libzmq and OS offer ``ipc://`` endpoints."""
    return os.name == "posix" and zmq.has("ipc")


def make_dir(host: str, port: int) -> str:
    """The directory for the sockets of the pool on tcp *host*:*port*.

    Named by the address, so that a pool restarted on the same port has the same
    ``ipc://`` address and its clients reconnect as tcp ones do; a directory
    left by a killed pool of ours is reused, one of another user means a
    fresh random name. Short: Unix socket paths allow ~100 bytes.
    """
    base = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    name = f"gpuwb-pool-{''.join(c if c.isalnum() else '_' for c in host)[:20]}-{port}"
    path = os.path.join(base, name)
    try:
        os.mkdir(path, 0o711)
    except FileExistsError:
        info = os.lstat(path)
        if not (os.path.isdir(path) and not os.path.islink(path) and info.st_uid == os.getuid()):
            path = tempfile.mkdtemp(prefix=name + "-", dir=base)
    os.chmod(path, 0o711)
    mark_owner(path)   # (a dead pool's directory is swept by the next pool: run_dir)
    return path


def bind(sock: zmq.Socket, directory: str, name: str) -> str:
    """Bind *sock* also to ``ipc://DIRECTORY/NAME``; returns that address."""
    path = os.path.join(directory, name)
    address = f"ipc://{path}"
    sock.bind(address)
    os.chmod(path, 0o666)
    return address


def remove_dir(directory: str | None) -> None:
    if directory:
        shutil.rmtree(directory, ignore_errors=True)
