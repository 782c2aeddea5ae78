"""CurveZMQ for the pool: key files and socket set-up.

The pool has one key pair. ``gpuwb-backend keys --out FILE`` writes the
secret key file (``public-key`` and ``secret-key`` lines, Z85, mode 0600) and
``FILE.pub`` (the public key, Z85, one line), which clients pin, as SSH pins a
host key: a file or value given to ``kernelproxy.connect(server_key=...)``, or
a line of the known-pools file (``$GPUWB_KNOWN_POOLS``, default
``~/.config/gpuwb/known_pools``)::

    # comment lines start with '#' (Z85 keys can contain '#': no comments after a key)
    tcp://gpu-host:5555 rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7

Pool sockets (the front door's client socket, every worker's session socket)
are CURVE servers with that pair; client sockets are CURVE clients with a
fresh key pair of their own and the pinned server key. The pool installs no
ZAP handler, so libzmq accepts any client key: CURVE gives confidentiality and
proves the pool's identity; who may use the pool is still the token's job.

Options are set once, when a socket is made: nothing here runs per message.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import NamedTuple

import zmq
from zmq.utils import z85

__all__ = ["ServerKeys", "InsecureListenError", "generate_keypair", "load_server_keys",
           "load_public_key", "secure_server", "secure_client", "is_loopback",
           "server_keys_for", "known_pools_path", "known_pool_key", "resolve_server_key"]

log = logging.getLogger("gpu_backend.security")

#: Length of a CurveZMQ key in Z85 (32 bytes).
Z85_KEY_LENGTH = 40
_KEY_LINE = re.compile(r'^\s*(public-key|secret-key)\s*=\s*"([^"]*)"\s*$')


class ServerKeys(NamedTuple):
    """The pool's key pair, Z85 (as libzmq's socket options take it)."""

    public: bytes
    secret: bytes


class InsecureListenError(ValueError):
    """A pool was asked to listen off loopback without a key pair."""


# ------------------------------------------------------------------ key files

def generate_keypair(path: str | os.PathLike, force: bool = False) -> tuple[Path, Path, bytes]:
    """Make a key pair: the secret key file *path* (mode 0600) and ``path + ".pub"``.

    Returns (secret file, public file, public key in Z85). Existing files are
    kept (FileExistsError) unless *force*.
    """
    secret_path = Path(path).expanduser()
    public_path = secret_path.with_name(secret_path.name + ".pub")
    if not force:
        for existing in (secret_path, public_path):
            if existing.exists():
                raise FileExistsError(f"{existing} exists; pass --force to replace it")
    public, secret = zmq.curve_keypair()
    _write(secret_path, (
        "# gpu-workbench pool key pair (CurveZMQ), made by gpuwb-backend keys.\n"
        "# Keep this file secret (mode 0600); clients pin the .pub file beside it.\n"
        "curve\n"
        f'    public-key = "{public.decode()}"\n'
        f'    secret-key = "{secret.decode()}"\n'), 0o600)
    _write(public_path, public.decode() + "\n", 0o644)
    return secret_path, public_path, public


def _write(path: Path, text: str, mode: int) -> None:
    """Write *text* to *path* with *mode* from the start (never readable by others on the way)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load_server_keys(path: str | os.PathLike) -> ServerKeys:
    """Read a secret key file written by :func:`generate_keypair`; checks the pair matches."""
    path = Path(path).expanduser()
    try:
        text = path.read_text()
    except OSError as exc:
        raise type(exc)(exc.errno, f"cannot read the pool's key file: {exc.strerror}", str(path)) from None
    found: dict[str, bytes] = {}
    for line in text.splitlines():
        match = _KEY_LINE.match(line)
        if match:
            found[match.group(1)] = match.group(2).encode()
    if "secret-key" not in found or "public-key" not in found:
        raise ValueError(f"{path} is not a key file: it needs public-key and secret-key lines "
                         "(make one with gpuwb-backend keys --out FILE)")
    for name, key in found.items():
        if not _is_z85_key(key):
            raise ValueError(f"{path}: {name} is not a Z85 key of {Z85_KEY_LENGTH} characters")
    if zmq.curve_public(found["secret-key"]) != found["public-key"]:
        raise ValueError(f"{path}: public-key does not belong to secret-key")
    if os.name == "posix" and path.stat().st_mode & 0o077:
        log.warning("key file %s can be read by other users; chmod 600 it", path)
    return ServerKeys(found["public-key"], found["secret-key"])


def load_public_key(text_or_path: str | bytes | os.PathLike) -> bytes:
    """A pinned server key: a Z85 key itself, or the path of a file holding one (a ``.pub``)."""
    if isinstance(text_or_path, (str, bytes)):
        raw = text_or_path.encode() if isinstance(text_or_path, str) else text_or_path
        if _is_z85_key(raw.strip()):
            return raw.strip()
    path = Path(os.fsdecode(text_or_path)).expanduser()
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"server key {os.fsdecode(text_or_path)!r:.80} is neither a Z85 public key "
                         f"({Z85_KEY_LENGTH} characters) nor a readable key file ({exc})") from None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) == 1 and _is_z85_key(lines[0].encode()):
        return lines[0].encode()
    raise ValueError(f"{path} does not hold one Z85 public key (a pool's .pub file, "
                     "made by gpuwb-backend keys)")


def _is_z85_key(key: bytes) -> bool:
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


# ------------------------------------------------------------------ policy

def is_loopback(host: str) -> bool:
    """Is *host* (from ``tcp://HOST:PORT``) a loopback address? ``*``, ``0.0.0.0``,
    interface names and other host names are not."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def server_keys_for(host: str, key_file: str | os.PathLike | None) -> ServerKeys | None:
    """The pool's keys, or None for a plain pool (loopback with no key file).

    Off loopback a key file is required: :class:`InsecureListenError` otherwise,
    raised before any socket is made.
    """
    if key_file is not None:
        return load_server_keys(key_file)
    if not is_loopback(host):
        raise InsecureListenError(
            f"refusing to listen on {host or '?'} without encryption: tokens, session keys and "
            "arrays would cross the network in clear. Make a key pair with "
            "'gpuwb-backend keys --out FILE' and start the pool with '--key-file FILE' "
            "(or GPUWB_KEY_FILE); clients pin FILE.pub")
    return None


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
        if len(fields) != 2 or not _is_z85_key(fields[1].encode()):
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
