"""The process's connection to a pool: what the kernel and ``%gpu connect`` share.

One :class:`Workbench` per process holds the current session (and, when no
pool is configured, an embedded :class:`~gpu_backend.pool.LocalPool` that
lives and dies with it), keeps the ``cupy`` import hook pointed at that
session, and opens a new session when the old one is lost.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict

import kernelproxy
from gpu_backend.config import arguments_env_then_toml, read_token
from gpu_backend.pool import LocalPool

__all__ = ["ClientSettings", "Workbench", "workbench"]


class ClientSettings(BaseSettings):
    """Where the kernel's pool is: ``GPUWB_POOL``/``GPUWB_TOKEN``/``GPUWB_TOKEN_FILE``
    (and its pinned key: ``GPUWB_SERVER_KEY``/``GPUWB_SERVER_KEY_FILE``), or a TOML file
    named by ``GPUWB_CLIENT_CONFIG``; none means an embedded pool."""

    model_config = SettingsConfigDict(env_prefix="GPUWB_", extra="ignore")

    pool: str | None = None
    token: str | None = None
    token_file: Path | None = None
    server_key: str | None = None         # the pool's public key (Z85), pinned
    server_key_file: Path | None = None   # ... or the file holding it (the pool's .pub)
    devices: str = "auto"                 # the embedded pool's devices
    memory_limit: int | None = None       # ask the pool for less than its default
    session_devices: int = 1              # hold this many of the pool's devices (Device(0..n-1))
    auto_reconnect: bool = True
    progress_after: float = 1.0           # seconds a transfer runs before the cell shows it
    pool_owner: str | None = None         # what runs GPUWB_POOL, in words (gpuwb demo, gpuwb lab)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                   dotenv_settings, file_secret_settings):
        return arguments_env_then_toml(settings_cls, init_settings, env_settings,
                                       "GPUWB_CLIENT_CONFIG")

    def resolved_token(self) -> str | None:
        if self.token:
            return self.token
        return read_token(self.token_file) if self.token_file else None

    def resolved_server_key(self) -> str | None:
        """The configured pinned key (a key or a file), or None (then known_pools decides)."""
        if self.server_key:
            return self.server_key
        return str(self.server_key_file.expanduser()) if self.server_key_file else None


class Workbench:
    """The current session of this process, and how to get a new one."""

    def __init__(self) -> None:
        self.settings = ClientSettings()
        self.session: kernelproxy.Session | None = None
        self.pool: LocalPool | None = None
        self.address: str | None = None
        self._token: str | None = None
        self._server_key: str | None = None
        self.devices = 1   # how many of the pool's devices the session holds
        self.reconnects = 0

    @property
    def embedded(self) -> bool:
        return self.pool is not None

    @property
    def pool_runs_in(self) -> str | None:
        """Where the session's pool runs, in words (``%gpu status``): this process's own
        embedded pool, the process that started this kernel with one (``gpuwb demo``, ``gpuwb
        lab``: ``GPUWB_POOL_OWNER``), or another process."""
        if self.address is None:
            return None
        if self.pool is not None:
            return "this kernel's process (it ends with the kernel)"
        if self.settings.pool_owner and self.address == self.settings.pool:
            return self.settings.pool_owner
        return "another process (not this kernel)"

    def connect(self, address: str | None = None, token: str | None = None,
                server_key: str | None = None, devices: int | None = None) -> kernelproxy.Session:
        """Open a session: on *address*, else the configured pool, else an embedded one;
        holding *devices* of its devices (default: the ``session_devices`` setting).

        *server_key* pins the pool's public key (a Z85 key or a ``.pub`` file); without it,
        the configured key (GPUWB_SERVER_KEY(_FILE)) when *address* is the configured pool
        or none is configured, else the known-pools file.
        """
        self.disconnect()
        if server_key is None and (address is None or self.settings.pool in (None, address)):
            server_key = self.settings.resolved_server_key()
        address = address or self.settings.pool
        token = token or self.settings.resolved_token()
        if address is None:
            self.pool = LocalPool(devices=self.settings.devices).start()
            address, token, server_key = self.pool.address, self.pool.token, None
        elif token is None:
            raise ValueError(f"no token for {address}: pass --token or set GPUWB_TOKEN(_FILE)")
        self.address, self._token, self._server_key = address, token, server_key
        self.devices = self.settings.session_devices if devices is None else devices
        self.session = kernelproxy.connect(address, token, server_key=server_key,
                                           memory_limit=self.settings.memory_limit,
                                           devices=self.devices)
        kernelproxy.install(self.session)
        return self.session

    def reconnect(self) -> kernelproxy.Session:
        """A new session on the same pool (the old one's arrays are gone)."""
        if self.session is not None:
            try:
                self.session.close()
            except Exception:  # it is lost already
                pass
        if self.address is None:
            return self.connect()
        self.session = kernelproxy.connect(self.address, self._token, server_key=self._server_key,
                                           memory_limit=self.settings.memory_limit,
                                           devices=self.devices)
        kernelproxy.install(self.session)
        self.reconnects += 1
        return self.session

    def require(self) -> kernelproxy.Session:
        """The live session: reconnecting if it was lost and that is allowed."""
        session = self.session
        if session is None:
            raise kernelproxy.SessionLostError("not connected: use %gpu connect")
        # a client of several devices is lost when any one of its devices' sessions is:
        # device 1's arrays are gone with its worker, whatever device 0's session says
        if any(s.closed or s.heartbeat.lost for s in session.group or (session,)):
            if not self.settings.auto_reconnect:
                raise kernelproxy.SessionLostError("the session was lost: use %gpu connect")
            return self.reconnect()
        return session

    def disconnect(self) -> None:
        """Close the session and stop an embedded pool; ``import cupy`` is undone."""
        if kernelproxy.installed():
            kernelproxy.uninstall()
        if self.session is not None:
            try:
                self.session.close()
            finally:
                self.session = None
        if self.pool is not None:
            self.pool.stop()
            self.pool = None
        self.address = None


#: The process-wide instance: the kernel and the magics use this one.
workbench = Workbench()
