"""CurveZMQ as both ends of the wire use it: Z85 keys, sockets set up as CURVE servers and
clients, and the client's pinning of a pool's public key.

Clients pin the pool's public key, as SSH pins host keys: a key or a ``.pub`` file given to
``kernelproxy.connect(server_key=...)``, or a line of the known-pools file
(``$GPUWB_KNOWN_POOLS``, default ``~/.config/gpuwb/known_pools``)::

    # comment lines start with '#' (Z85 keys can contain '#': no comments after a key)
    tcp://gpu-host:5555 rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7

The pool's own side (its key file, the rule that it never listens off loopback in the
clear) is :mod:`gpu_backend.security`. Options are set once, when a socket is made:
nothing here runs per message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import zmq
from zmq.utils import z85

__all__ = ["Z85_KEY_LENGTH", "ServerKeys", "is_z85_key", "load_public_key", "secure_server",
           "secure_client", "known_pools_path", "known_pool_key", "resolve_server_key"]

#: Length of a CurveZMQ key in Z85 (32 bytes).
Z85_KEY_LENGTH = 40


class ServerKeys(NamedTuple):
    """The pool's key pair, Z85 (as libzmq's socket options take it)."""

    public: bytes
    secret: bytes


def load_public_key(text_or_path: str | bytes | os.PathLike) -> bytes:
    """A pinned server key: a Z85 key itself, or the path of a file holding one (a ``.pub``)."""
    if isinstance(text_or_path, (str, bytes)):
        raw = text_or_path.encode() if isinstance(text_or_path, str) else text_or_path
        if is_z85_key(raw.strip()):
            return raw.strip()
    path = Path(os.fsdecode(text_or_path)).expanduser()
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"server key {os.fsdecode(text_or_path)!r:.80} is neither a Z85 public key "
                         f"({Z85_KEY_LENGTH} characters) nor a readable key file ({exc})") from None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) == 1 and is_z85_key(lines[0].encode()):
        return lines[0].encode()
    raise ValueError(f"{path} does not hold one Z85 public key (a pool's .pub file, "
                     "made by gpuwb-backend keys)")


def is_z85_key(key: bytes) -> bool:
    if len(key) != Z85_KEY_LENGTH:
        return False
    try:
        return len(z85.decode(key)) == 32
    except (ValueError, KeyError, IndexError, TypeError, UnicodeDecodeError):
        return False


# ------------------------------------------------------------------ sockets

def secure_server(sock: zmq.Socket, keys: ServerKeys) -> None:
    """Make *sock* a CURVE server with the pool's pair; call before bind."""
    sock.curve_server = True
    sock.curve_secretkey = keys.secret
    sock.curve_publickey = keys.public


def secure_client(sock: zmq.Socket, server_public: bytes) -> None:
    """Make *sock* a CURVE client (a fresh key pair) that accepts only *server_public*;
    call before connect."""
    public, secret = zmq.curve_keypair()
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.curve_serverkey = server_public


# ------------------------------------------------------------------ client pinning

def known_pools_path() -> Path:
    """``$GPUWB_KNOWN_POOLS``, else ``~/.config/gpuwb/known_pools``."""
    env = os.environ.get("GPUWB_KNOWN_POOLS")
    return Path(env).expanduser() if env else Path.home() / ".config" / "gpuwb" / "known_pools"


def known_pool_key(address: str, path: str | os.PathLike | None = None) -> bytes | None:
    """The key pinned for *address* (``tcp://host:port``, matched exactly) in the
    known-pools file, or None (also when there is no such file)."""
    path = Path(path).expanduser() if path is not None else known_pools_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 2 or not is_z85_key(fields[1].encode()):
            raise ValueError(f"{path}, line {number}: expected 'tcp://host:port <Z85 public key>'")
        if fields[0] == address:
            return fields[1].encode()
    return None


def resolve_server_key(address: str, server_key: str | bytes | os.PathLike | None) -> bytes | None:
    """The key to pin for *address*: *server_key* (a key or a file), else the
    known-pools entry, else None (a plain connection)."""
    if server_key is not None:
        return load_public_key(server_key)
    return known_pool_key(address)
