"""The Jupyter server extension: the pool and the catalogue as JSON for JupyterLab.

Enabled by ``jupyter_server_config.d/gpu_workbench.json`` (shipped in the wheel) or
``--ServerApp.jpserver_extensions={"workbench.jupyter_extension": True}``. Endpoints,
all behind the server's own authentication (no token: 403, as every Jupyter API):

``GET /gpuwb/api/status``
    the pool's devices, users and shares, sessions and memory, as the pool answers a
    status request, from a :class:`~workbench.pool_watch.PoolWatcher` that polls it in
    the background over one connection (``?history=1`` adds each device's per-user
    device seconds of the last ``history_s`` seconds, for the Lab panel's chart);
    ``state`` is "ok", "starting", "down" (HTTP 503, with the reason, and the last status
    seen as ``last_status`` with its time and age: the Lab panel shows it marked stale) or
    "none" (no pool configured: the kernels run embedded pools). ``?history=1`` also adds
    each device's samples (busy, memory; NVML's utilisation on a GPU) for the panel's plots.
``DELETE /gpuwb/api/sessions/<id>``
    end one of your own sessions (the panel's "End"): the pool checks that the session is
    the token's user's (403 with the pool's reason otherwise; 404 when no open session has
    that id; 503 when the pool does not answer). Like every non-GET request of the server
    it needs the token, or the session cookie with the XSRF header (as Lab sends them).
``GET /gpuwb/api/catalog``
    the catalogue's systems; ``?q=`` searches (hits with their scores), ``?category=``,
    ``kind``, ``area``, ``mechanism`` (repeatable), ``venue``, ``since``, ``until``,
    ``code`` filter; a bad filter is a 400 naming the valid values.
``GET /gpuwb/api/catalog/<name or key>``
    one system (404 when unknown or ambiguous, with the candidates).

The pool is the one the remote-GPU kernel uses (``GPUWB_POOL``, ``GPUWB_TOKEN`` or
``GPUWB_TOKEN_FILE``, ``GPUWB_SERVER_KEY(_FILE)``, or ``GPUWB_CLIENT_CONFIG``), or set
on the extension (``--GpuWorkbench.pool=...``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.application import ExtensionApp
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web
from traitlets import Float, Int, Unicode

from catalog import queries
from gpu_backend.protocol.errors import PoolError
from gpu_backend.security import resolve_server_key

from .connection import ClientSettings
from .labext_check import lab_extension_problem
from .pool_watch import PoolWatcher

__all__ = ["GpuWorkbench", "_jupyter_server_extension_points"]


class _Handler(ExtensionHandlerMixin, APIHandler):
    def reply(self, body: dict, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body, default=str))


class StatusHandler(_Handler):
    @web.authenticated
    def get(self) -> None:
        watcher: PoolWatcher | None = self.settings["gpuwb_watcher"]
        if watcher is None:
            self.reply({"pool": None, "state": "none",
                        "message": "no pool is configured for this server (GPUWB_POOL): "
                                   "remote-GPU kernels run embedded pools"})
            return
        view = watcher.snapshot()
        if self.get_argument("history", "0") not in ("1", "true", "yes"):
            for key in ("status", "last_status"):   # the history only for who asks for it
                if key in view:
                    view[key] = {k: v for k, v in view[key].items()
                                 if k not in ("history", "device_history")}
        self.reply(view, 503 if view["state"] == "down" else 200)


class SessionHandler(_Handler):
    @web.authenticated
    async def delete(self, session: str) -> None:
        watcher: PoolWatcher | None = self.settings["gpuwb_watcher"]
        if watcher is None:
            self.reply({"error": "no pool is configured for this server"}, 404)
            return
        loop = asyncio.get_running_loop()
        try:   # (a blocking request to the pool: off the server's loop)
            ended = await loop.run_in_executor(None, watcher.end_session, session)
        except PermissionError as exc:   # another user's session, or the token refused
            self.reply({"session": session, "error": str(exc)}, 403)
            return
        except (PoolError, ConnectionError, TimeoutError) as exc:
            self.reply({"session": session, "error": f"{type(exc).__name__}: {exc}"}, 503)
            return
        if not ended:
            self.reply({"session": session, "ended": False,
                        "error": f"no open session {session}: it has ended already"}, 404)
            return
        self.reply({"session": session, "ended": True})


def _system(system: Any) -> dict:
    return system.model_dump(mode="json")


class CatalogHandler(_Handler):
    @web.authenticated
    def get(self) -> None:
        args = {name: self.get_argument(name, None) for name in
                ("q", "category", "kind", "area", "venue", "since", "until", "code", "sort")}
        mechanisms = self.get_arguments("mechanism")
        try:
            if args["q"]:
                hits = queries.search(args["q"])
                body = {"query": args["q"], "count": len(hits),
                        "systems": [{**_system(h.system), "score": h.score} for h in hits]}
            else:
                filters = {k: v for k, v in args.items() if k not in ("q", "sort") and v is not None}
                for year in ("since", "until"):
                    if year in filters:
                        filters[year] = _year(year, filters[year])
                if "code" in filters:
                    filters["code"] = filters["code"].lower() in ("1", "true", "yes")
                systems = queries.filter_systems(**filters, mechanism=mechanisms or None,
                                                 sort=args["sort"] or "year")
                body = {"count": len(systems), "systems": [_system(s) for s in systems]}
        except queries.CatalogError as exc:
            self.reply({"error": str(exc)}, 400)
            return
        self.reply(body)


def _year(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise queries.CatalogError(f"{name} must be a year, not {value!r}") from None


class SystemHandler(_Handler):
    @web.authenticated
    def get(self, name: str) -> None:
        try:
            system = queries.show(name)
        except queries.UnknownSystemError as exc:
            self.reply({"error": str(exc)}, 404)
            return
        self.reply(_system(system))


class GpuWorkbench(ExtensionApp):
    """gpu-workbench in a Jupyter server: the pool's status and the catalogue."""

    name = "gpuwb"
    pool = Unicode(None, allow_none=True, config=True,
                   help="the pool's front door (default: the kernels' GPUWB_POOL)")
    token_file = Unicode(None, allow_none=True, config=True,
                         help="a file holding the pool token (default: GPUWB_TOKEN(_FILE))")
    server_key = Unicode(None, allow_none=True, config=True,
                         help="the pool's public key or its file, pinned (default: "
                              "GPUWB_SERVER_KEY(_FILE), then the known-pools file)")
    poll_interval = Float(2.0, config=True, help="seconds between status requests")
    poll_timeout = Float(5.0, config=True, help="seconds to wait for the pool's answer")
    history_s = Int(300, min=1, max=600, config=True,
                    help="seconds of per-user device time asked for the Lab panel's chart "
                         "(the pool keeps 600)")
    watcher: PoolWatcher | None = None

    def initialize_settings(self) -> None:
        self.watcher = self._watcher()
        self.settings["gpuwb_watcher"] = self.watcher
        problem = lab_extension_problem()
        if problem is not None:   # (a pip install without Node.js said nothing)
            self.log.warning("gpu-workbench: %s", problem)

    def _watcher(self) -> PoolWatcher | None:
        client = ClientSettings()
        address = self.pool or client.pool
        if not address:
            return None
        if self.token_file:
            from gpu_backend.config import read_token
            token = read_token(self.token_file)
        else:
            token = client.resolved_token()
        key = resolve_server_key(address, self.server_key or client.resolved_server_key())
        return PoolWatcher(address, token or "", key, interval=self.poll_interval,
                           timeout=self.poll_timeout, history=self.history_s).start()

    def initialize_handlers(self) -> None:
        self.handlers.extend([
            (r"/gpuwb/api/status", StatusHandler),
            (r"/gpuwb/api/sessions/(?P<session>[0-9A-Za-z_-]{1,64})", SessionHandler),
            (r"/gpuwb/api/catalog", CatalogHandler),
            (r"/gpuwb/api/catalog/(?P<name>[^/]+)", SystemHandler),
        ])

    async def stop_extension(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "workbench.jupyter_extension", "app": GpuWorkbench}]
