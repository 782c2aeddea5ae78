"""The pool as a Jupyter server sees it: its status, polled in the background.

The server extension answers ``/gpuwb/api/status`` from here, so a page that refreshes
every few seconds, or many pages, cost the pool one status request per interval, not
one per page. A :class:`PoolWatcher` keeps one front-door connection (a DEALER socket,
CurveZMQ when the pool's key is pinned) in its own thread, asks for the status every
*interval* seconds (with the last *history* seconds of per-user device time, for the
Lab panel's chart) and keeps the latest answer, or why there is none: the pool did not
answer (down, or a wrong key: the socket is then made anew, so that a stale reply
cannot be taken for a fresh one) or refused the token. While the pool is down it keeps
the last status it had and says how old it is, so that the Lab panel can show it as
stale rather than as live. It also carries the one request the server makes on a
user's behalf: ending one of their sessions (:meth:`PoolWatcher.end_session`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import zmq

from gpu_backend.protocol.addresses import allow_ipv6
from gpu_backend.protocol.codec import packb, unpackb
from gpu_backend.protocol.errors import error_class
from gpu_backend.security import secure_client
from kernelproxy.connection import signed_in_request

__all__ = ["PoolWatcher"]


class PoolWatcher:
    """The latest status of the pool at *address*, asked for every *interval* seconds."""

    def __init__(self, address: str, token: str, server_key: bytes | None = None,
                 interval: float = 2.0, timeout: float = 5.0, history: int = 300) -> None:
        self.address, self._token, self._server_key = address, token, server_key
        self.interval, self.timeout = interval, timeout
        self.history = history   # seconds of per-user device time asked for with each status
        self._ctx = zmq.Context.instance()
        self._sock: zmq.Socket | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()   # poll now (a session was ended), not at the next tick
        self._thread: threading.Thread | None = None
        self._status: dict | None = None   # the pool's last answer
        self._updated = 0.0                # when it came (time.time())
        self._error: str | None = None     # why the last poll has no answer
        self._error_since = 0.0
        self.polls = 0

    # -- the thread ----------------------------------------------------------------------
    def start(self) -> "PoolWatcher":
        self._thread = threading.Thread(target=self._run, name="gpuwb-pool-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 1)

    def refresh(self) -> None:
        """Ask the pool again now (from any thread), rather than after the interval."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._wake.wait(self.interval)
            self._wake.clear()
        self._close()

    def poll(self) -> None:
        """Ask once; keep the answer or the reason there is none."""
        try:
            request = {"t": "status", "token": self._token}
            if self.history:
                request["history"] = self.history
            reply = self._ask(request)
        except Exception as exc:  # noqa: BLE001 — any failure is "no status", with its reason
            with self._lock:
                if self._error is None:
                    self._error_since = time.time()
                self._error = f"{type(exc).__name__}: {exc}"
        else:
            with self._lock:
                self._status, self._updated, self._error = reply, time.time(), None
        self.polls += 1

    def _ask(self, msg: dict) -> dict:
        if self._sock is None:
            sock = self._ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            allow_ipv6(sock, self.address)
            if self._server_key is not None:
                secure_client(sock, self._server_key)
            sock.connect(self.address)
            self._sock = sock
        self._sock.send(packb(msg))
        if not self._sock.poll(int(self.timeout * 1000)):
            self._close()   # its late reply would answer the next request
            raise TimeoutError(f"the pool at {self.address} did not answer within "
                               f"{self.timeout:g} s")
        reply = unpackb(self._sock.recv())
        if not isinstance(reply, dict) or not reply.get("ok"):
            name, text = (reply.get("error") if isinstance(reply, dict) else None) \
                or ("RemoteError", "a malformed reply")
            raise error_class(name)(text)
        return reply

    def _close(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None

    def end_session(self, session: str) -> bool:
        """End one of the token's user's own sessions (the Lab panel's "End"), on a socket of
        its own (blocking: handlers call it in an executor); whether one was open. The pool
        refuses another user's session (NotAllowedError) and a wrong token, and says so."""
        ctx = zmq.Context.instance()
        reply = signed_in_request(ctx, self.address,
                                  {"t": "end", "token": self._token, "session": session},
                                  self.timeout, server_key=self._server_key)
        self.refresh()   # the panel's next poll shows it gone
        return bool(reply.get("ended"))

    # -- what the handlers read -----------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """``state`` "ok" with the pool's ``status`` and its age, "down" with the ``error``
        (and the last status seen, if any, with when it came and its age: stale data, for
        the Lab panel to mark so), or "starting" before the first answer."""
        with self._lock:
            status, updated, error, since = self._status, self._updated, self._error, self._error_since
        now = time.time()
        view: dict[str, Any] = {"pool": self.address, "interval_s": self.interval}
        if error is not None:
            view.update(state="down", error=error, down_for_s=round(now - since, 1))
            if status is not None:
                view.update(last_status=status, last_updated=updated,
                            last_age_s=round(now - updated, 1))
        elif status is None:
            view.update(state="starting")
        else:
            view.update(state="ok", status=status, updated=updated, age_s=round(now - updated, 2))
        return view
