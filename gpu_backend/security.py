"""CurveZMQ for the pool: its key file, and the rule that it never listens off loopback in
the clear.

The pool has one key pair. ``gpuwb-backend keys --out FILE`` writes the
secret key file (``public-key`` and ``secret-key`` lines, Z85, mode 0600) and
``FILE.pub`` (the public key, Z85, one line), which clients pin, as SSH pins a
host key (:mod:`gpu_backend.protocol.curve`, which both ends use, says how; its names
are re-exported here).

Pool sockets (the front door's client socket, every worker's session socket)
are CURVE servers with that pair; client sockets are CURVE clients with a
fresh key pair of their own and the pinned server key. The pool installs no
ZAP handler, so libzmq accepts any client key: CURVE gives confidentiality and
proves the pool's identity; who may use the pool is still the token's job.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import tempfile
from pathlib import Path

import zmq

__all__ = ["ServerKeys", "InsecureListenError", "generate_keypair", "load_server_keys",
           "load_public_key", "secure_server", "secure_client", "is_loopback",
           "server_keys_for", "known_pools_path", "known_pool_key", "resolve_server_key"]

# (what clients use too lives in the protocol package, which kernelproxy may import)
from .protocol.curve import (Z85_KEY_LENGTH, ServerKeys, is_z85_key as _is_z85_key,  # noqa: E402
                             known_pool_key, known_pools_path, load_public_key,
                             resolve_server_key, secure_client, secure_server)

log = logging.getLogger("gpu_backend.security")

_KEY_LINE = re.compile(r'^\s*(public-key|secret-key)\s*=\s*"([^"]*)"\s*$')


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


# ------------------------------------------------------------------ policy

def is_loopback(host: str) -> bool:
    """Is *host* (from ``tcp://HOST:PORT``) a loopback address? ``*``, ``0.0.0.0``,
    interface names and other host names are not; an IPv4-mapped IPv6 address is what
    it maps (``[::ffff:127.0.0.1]`` is, as Python 3.13 says too)."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


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


