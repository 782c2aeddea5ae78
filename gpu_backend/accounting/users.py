"""Users, their tokens and quotas: the users file and the registry the pool checks tokens with.

The file format and its meaning are in ``docs/fair-share.md`` ("Users"). Who calls what:

- ``gpuwb-backend users`` (:mod:`gpu_backend.cli_users`) edits the file with
  :func:`load_users` / :func:`save_users` and makes tokens with :func:`new_token`
  and :func:`hash_token`.
- The pool's front door holds a :class:`UserRegistry`: :meth:`UserRegistry.authenticate`
  on every message that carries a token, :meth:`UserRegistry.reload` every second and
  on SIGHUP, so edits made by the command take effect without a restart.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import os
import re
import secrets
import tempfile
import tomllib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpu_backend.protocol.errors import AuthenticationError

__all__ = ["DEFAULT_USER", "Reload", "User", "UserRegistry", "UsersFileError", "format_size",
           "hash_token", "load_users", "new_token", "parse_size", "save_users", "token_user",
           "verify_token"]

log = logging.getLogger(__name__)

#: the one user of a pool in single-token mode
DEFAULT_USER = "default"
NAME_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
_NAME = re.compile(NAME_PATTERN)
#: longer "tokens" are refused before any hashing (real ones are a name, a dot and 43 characters)
MAX_TOKEN_LENGTH = 256

# scrypt parameters: what we write, and the most we accept from a file (4x the work of
# what we write, 64 MiB of memory) so that a hostile hash string cannot exhaust the pool.
SCRYPT_N, SCRYPT_R, SCRYPT_P, SALT_BYTES, HASH_BYTES = 1 << 14, 8, 1, 16, 32
_MAX_N, _MAX_R, _MAX_P, _MAX_WORK = 1 << 16, 16, 4, 128 * (1 << 16) * 8
_HASH = re.compile(r"scrypt\$([0-9]{1,8})\$([0-9]{1,3})\$([0-9]{1,3})"
                   r"\$([A-Za-z0-9+/]{1,100}={0,2})\$([A-Za-z0-9+/]{1,100}={0,2})")


class User(BaseModel):
    """One line of the users file: who, the scrypt hash of their token, their share and quotas."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str = Field(pattern=NAME_PATTERN)
    token_hash: str
    weight: float = Field(1.0, gt=0, le=1000, strict=True)
    memory: int | None = Field(None, ge=1 << 20, strict=True, description="bytes over all sessions")
    sessions: int | None = Field(None, ge=1, strict=True, description="sessions at once")


class UsersFileError(ValueError):
    """The users file cannot be read or is not a valid users file; the text says where and why."""


@dataclass(frozen=True)
class Reload:
    """What a :meth:`UserRegistry.reload` changed: names added, removed, and changed
    (weight, quotas or token hash). The front door ends removed users' sessions and
    passes new weights to the arbiter."""

    added: frozenset[str]
    removed: frozenset[str]
    changed: frozenset[str]


# -- tokens -----------------------------------------------------------------------------

def new_token(name: str) -> str:
    """A fresh token for *name*: ``NAME.SECRET``, SECRET 32 random bytes in URL-safe base64."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"invalid user name {name!r}: 1 to 64 of A-Z a-z 0-9 _ -")
    return f"{name}.{secrets.token_urlsafe(32)}"


def token_user(token: object) -> str | None:
    """The user a token names (it only says which hash to check), or None."""
    if not isinstance(token, str):
        return None
    name, dot, _ = token.partition(".")
    return name if dot and _NAME.match(name) else None


def hash_token(token: str) -> str:
    """The ``scrypt$N$r$p$salt$hash`` string the users file keeps instead of *token*."""
    salt = secrets.token_bytes(SALT_BYTES)
    digest = hashlib.scrypt(token.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P,
                            dklen=HASH_BYTES)
    return (f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}$"
            f"{base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}")


def _parse_hash(token_hash: object) -> tuple[int, int, int, bytes, bytes] | None:
    """(n, r, p, salt, hash) of a well-formed hash string within our limits, else None."""
    match = _HASH.fullmatch(token_hash) if isinstance(token_hash, str) else None
    if match is None:
        return None
    n, r, p = (int(match[i]) for i in (1, 2, 3))
    if (n < 2 or n & (n - 1) or n > _MAX_N or not 1 <= r <= _MAX_R or not 1 <= p <= _MAX_P
            or 128 * n * r * p > _MAX_WORK):
        return None
    try:
        salt, digest = (base64.b64decode(match[i], validate=True) for i in (4, 5))
    except binascii.Error:
        return None
    if not 8 <= len(salt) <= 64 or not 16 <= len(digest) <= 64:
        return None
    return n, r, p, salt, digest


def verify_token(token: str, token_hash: str) -> bool:
    """Whether *token* hashes to *token_hash*; False (never an exception) for anything malformed."""
    parsed = _parse_hash(token_hash)
    if parsed is None or not isinstance(token, str):
        return False
    n, r, p, salt, expected = parsed
    try:
        actual = hashlib.scrypt(token.encode(), salt=salt, n=n, r=r, p=p, dklen=len(expected),
                                maxmem=2 * 128 * n * r + (1 << 22))
    except (ValueError, MemoryError):           # UnicodeEncodeError is a ValueError
        return False
    return hmac.compare_digest(actual, expected)


# -- sizes ------------------------------------------------------------------------------

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_SIZE = re.compile(r"\s*([0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})\s*(?:([KMGTP])(?:i?B)?|B)?\s*",
                   re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from ``16GiB``, ``512MiB``, ``1.5G``, ``4 GiB`` or ``1000000``; K, M, G, T, P are
    binary with or without ``iB``/``B``. A fraction of a unit is rounded down to whole bytes."""
    match = _SIZE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not a size: {text!r} (examples: 16GiB, 512MiB, 1.5G, 1000000)")
    unit = _UNITS[(match[2] or "").upper()]
    value = Fraction(match[1]) * unit
    if unit == 1 and value.denominator != 1:
        raise ValueError(f"not a whole number of bytes: {text!r}")
    return int(value)


def format_size(n: int) -> str:
    """``16GiB``, ``1.5GiB``, ``123B``: the largest unit that shows *n* exactly in at most two
    decimals, so that ``parse_size(format_size(n)) == n``."""
    if n < 0:
        raise ValueError(f"negative size {n}")
    for suffix, unit in sorted(_UNITS.items(), key=lambda kv: -kv[1]):
        if unit > 1 and n >= unit and (n * 100) % unit == 0:
            whole, hundredths = divmod(n * 100 // unit, 100)
            decimals = f".{hundredths:02d}".rstrip("0") if hundredths else ""
            return f"{whole}{decimals}{suffix}iB"
    return f"{n}B"


# -- the file ---------------------------------------------------------------------------

_KEYS = ("token_hash", "weight", "memory", "sessions")


def load_users(path: str | os.PathLike) -> dict[str, User]:
    """The users in the file at *path*, by name; raises :class:`UsersFileError`."""
    try:
        data = tomllib.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise UsersFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsersFileError(f"{path}: not UTF-8 text: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsersFileError(f"{path}: not valid TOML: {exc}") from None
    for key in set(data) - {"users"}:
        raise UsersFileError(f"{path}: unknown key {key!r} (expected [users.NAME] tables)")
    tables = data.get("users", {})
    if not isinstance(tables, dict):
        raise UsersFileError(f"{path}: 'users' must be a table of [users.NAME] tables")
    users = {}
    for name, table in tables.items():
        where = f"{path}: [users.{name}]"
        if not _NAME.match(name):
            raise UsersFileError(f"{path}: invalid user name {name!r}: 1 to 64 of A-Z a-z 0-9 _ -")
        if not isinstance(table, dict):
            raise UsersFileError(f"{where}: must be a table")
        unknown = sorted(set(table) - set(_KEYS))
        if unknown:
            raise UsersFileError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
        if "token_hash" not in table:
            raise UsersFileError(f"{where}: token_hash is missing")
        if _parse_hash(table["token_hash"]) is None:
            raise UsersFileError(f"{where}: token_hash is not an scrypt hash as written by "
                                 "'gpuwb-backend users' (never put a token itself in the file)")
        try:
            users[name] = User(name=name, **table)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            raise UsersFileError(f"{where}: {field}: {first['msg']} (got {first['input']!r})") from None
    return users


def save_users(path: str | os.PathLike, users: dict[str, User]) -> None:
    """Write the users file atomically (a temporary file in the same folder, then a rename),
    mode 0600, keeping the owner and group of the file it replaces where we may."""
    target = os.path.realpath(path)            # through a symlink, not over it
    tables = {name: user.model_dump(exclude={"name"}, exclude_none=True)
              for name, user in sorted(users.items())}
    text = ("# gpu-workbench users: edit with 'gpuwb-backend users'; a running pool rereads it.\n"
            + tomli_w.dumps({"users": tables}))
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}.",
                               suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        try:
            old = os.stat(target)
            os.fchown(fd, old.st_uid, old.st_gid)
        except OSError:
            pass                                # new file, or not ours to give away
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- the registry -----------------------------------------------------------------------

def _signature(path: Path) -> tuple[int, ...]:
    """What tells a changed file: the inode changes with every atomic save, even within the
    file system's time resolution and at equal size (a new token hash)."""
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class UserRegistry:
    """The users the front door accepts. ``mode`` is ``"file"`` (a users file) or ``"single"``
    (one shared token; every session belongs to :data:`DEFAULT_USER`). Not locked: the front
    door calls it from its own loop (SIGHUP only asks that loop to reload)."""

    def __init__(self, users: dict[str, User], *, mode: str, path: Path | None = None,
                 token: str | None = None, signature: tuple | None = None) -> None:
        self.mode = mode
        self.path = path
        self._users = users
        self._token = token
        self._signature = signature
        self._verified: dict[bytes, tuple[str, str]] = {}   # sha256(token) -> (name, token_hash)

    @classmethod
    def single(cls, token: str) -> UserRegistry:
        """Single-token mode: *token* admits everybody as ``default`` (weight 1, no quotas)."""
        if not isinstance(token, str) or not token:
            raise ValueError("single-token mode needs a non-empty token")
        return cls({DEFAULT_USER: User(name=DEFAULT_USER, token_hash="")}, mode="single", token=token)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> UserRegistry:
        """The users of the file at *path*; raises :class:`UsersFileError` (also when missing)."""
        path = Path(path)
        try:
            signature = _signature(path)
        except OSError as exc:
            raise UsersFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
        return cls(load_users(path), mode="file", path=path, signature=signature)

    @property
    def users(self) -> dict[str, User]:
        """A copy of the users by name, as of the last successful load."""
        return dict(self._users)

    def get(self, name: str) -> User | None:
        return self._users.get(name)

    def authenticate(self, token: object) -> User:
        """The user *token* belongs to, or :class:`AuthenticationError` (same text in every case).
        A verified token is remembered by its SHA-256 until its user's hash changes, so only
        the first message of a token pays for scrypt."""
        user = self._check(token)
        if user is None:
            raise AuthenticationError("wrong or missing token")
        return user

    def _check(self, token: object) -> User | None:
        user, to_verify = self.screen(token)
        if to_verify is None:
            return user
        if verify_token(token, to_verify):
            self.remember(token, user)
            return user
        return None

    def screen(self, token: object) -> tuple[User | None, str | None]:
        """The cheap part of a check, with no hashing: ``(user, None)`` when *token* is
        accepted at once (the single token, or one verified before), ``(None, None)`` when it
        is refused at once (malformed, no such user), and ``(user, hash)`` when it names
        *user* and must be verified against *hash* (scrypt: :func:`verify_token`, which the
        front door runs off its loop, then :meth:`remember`)."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH:
            return None, None
        raw = token.encode("utf-8", "surrogatepass")
        if self.mode == "single":
            same = hmac.compare_digest(raw, self._token.encode("utf-8", "surrogatepass"))
            return (self._users[DEFAULT_USER] if same else None), None
        user = self._users.get(token_user(token) or "")
        if user is None:
            return None, None
        if self._verified.get(hashlib.sha256(raw).digest()) == (user.name, user.token_hash):
            return user, None
        return user, user.token_hash

    def remember(self, token: str, user: User) -> bool:
        """*token* was verified against *user*'s hash: later checks take it at once. False
        (nothing remembered) if the user or their hash changed meanwhile (a reload)."""
        if self._users.get(user.name) != user:
            return False
        self._verified[hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()] = \
            (user.name, user.token_hash)
        return True

    def reload(self, force: bool = False) -> Reload | None:
        """Re-read the file if it changed (or *force*); what changed, or None. A file that
        cannot be loaded is logged once per change and the previous users stay."""
        if self.mode != "file":
            return None
        try:
            signature = _signature(self.path)
        except OSError as exc:
            if self._signature != ("missing",):
                log.warning("users file %s: cannot read (%s); keeping the previous %d users",
                            self.path, exc.strerror or exc, len(self._users))
            self._signature = ("missing",)
            return None
        if signature == self._signature and not force:
            return None
        try:
            new = load_users(self.path)
        except UsersFileError as exc:
            self._signature = signature             # warn once per version of the file
            log.warning("%s; keeping the previous %d users", exc, len(self._users))
            return None
        try:
            if _signature(self.path) != signature:
                return None                         # written while we read: read it next time
        except OSError:
            return None
        self._signature = signature
        old = self._users
        change = Reload(added=frozenset(new.keys() - old.keys()),
                        removed=frozenset(old.keys() - new.keys()),
                        changed=frozenset(n for n in new.keys() & old.keys() if new[n] != old[n]))
        self._users = new
        self._verified = {key: (name, h) for key, (name, h) in self._verified.items()
                          if name in new and new[name].token_hash == h}
        if change.added or change.removed or change.changed:
            log.info("users file %s reloaded: added %s, removed %s, changed %s", self.path,
                     sorted(change.added), sorted(change.removed), sorted(change.changed))
            return change
        return None
