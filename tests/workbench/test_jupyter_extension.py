"""The Jupyter server extension (issue 10): a real Jupyter server (pytest-jupyter), a real
pool on the NumPy device, real HTTP requests with and without the server's token."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest
import tornado.httpclient

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for
from workbench.pool_watch import PoolWatcher

pytest_plugins = ("pytest_jupyter.jupyter_server",)

EXTENSION = {"workbench.jupyter_extension": True}


@pytest.fixture(scope="module")
def pool():
    with LocalPool(devices="cpu") as p:
        yield p


@pytest.fixture
def token_file(tmp_path, pool):
    path = tmp_path / "token"
    path.write_text(pool.token)
    return path


def _config(pool_address: str | None, token_file=None, **extra) -> dict:
    gpuwb = {"poll_interval": 0.2, "poll_timeout": 0.5, **extra}
    if pool_address:
        gpuwb.update(pool=pool_address, token_file=str(token_file) if token_file else None)
    return {"ServerApp": {"jpserver_extensions": EXTENSION}, "GpuWorkbench": gpuwb}


async def _get(jp_fetch, *parts, expect=200, **params):
    try:
        response = await jp_fetch(*parts, params=params or None)
    except tornado.httpclient.HTTPClientError as exc:
        assert exc.code == expect, (exc.code, exc.response.body if exc.response else b"")
        return json.loads(exc.response.body)
    assert response.code == expect
    return json.loads(response.body)


async def _status(jp_fetch, want: str, timeout: float = 10.0) -> dict:
    """The status endpoint's body once its state is *want* (503 exactly when "down")."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            response = await jp_fetch("gpuwb", "api", "status")
        except tornado.httpclient.HTTPClientError as exc:
            response = exc.response
        body = json.loads(response.body)
        assert response.code == (503 if body["state"] == "down" else 200), (response.code, body)
        if body["state"] == want or time.monotonic() > deadline:
            return body
        await asyncio.sleep(0.1)


class TestWithAPool:
    @pytest.fixture
    def jp_server_config(self, pool, token_file):
        return _config(pool.address, token_file)

    async def test_status_is_the_pools(self, jp_fetch, pool):
        session = kernelproxy.connect(pool.address, pool.token)   # someone on the pool
        try:
            deadline = time.monotonic() + 10
            while True:   # the watcher's next poll sees the new session
                body = await _status(jp_fetch, "ok")
                if body.get("status", {}).get("sessions") or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            assert body["state"] == "ok", body
            assert body["pool"] == pool.address
            status = body["status"]
            assert status["devices"], status
            assert status["sessions"], status
            assert body["age_s"] < 5
        finally:
            session.close()

    async def test_history_only_when_asked(self, jp_fetch, pool):
        """The Lab panel's chart: ?history=1 adds each device's per-user device seconds of
        the last minutes; a plain status request stays small."""
        session = kernelproxy.connect(pool.address, pool.token)
        try:
            x = module_for(session).ones((512, 512))
            deadline = time.monotonic() + 15
            while True:   # device time lands in the usage history by whole seconds
                for _ in range(5):
                    x = (x @ x) / 512.0
                float(x.sum())
                body = await _get(jp_fetch, "gpuwb", "api", "status", history="1")
                series = body.get("status", {}).get("history", {}).get("cpu:0", {}).get("users", {})
                if any(series.get("default", [])) or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.3)
            history = body["status"]["history"]["cpu:0"]
            assert history["step"] == 1.0 and len(history["users"]["default"]) == 300, history
            assert sum(history["users"]["default"]) > 0
            samples = body["status"]["device_history"]["cpu:0"]   # the panel's device plots
            assert samples["step"] == 2.0 and len(samples["busy"]) == len(samples["memory"]) > 0
            plain = await _get(jp_fetch, "gpuwb", "api", "status")
            assert "history" not in plain["status"] and "device_history" not in plain["status"]
        finally:
            session.close()

    async def test_catalog_list_search_and_one_system(self, jp_fetch):
        everything = await _get(jp_fetch, "gpuwb", "api", "catalog")
        assert everything["count"] == len(everything["systems"]) > 10
        hits = await _get(jp_fetch, "gpuwb", "api", "catalog", q="preemption")
        assert hits["count"] > 0 and all("score" in s for s in hits["systems"])
        keys = {s["key"] for s in everything["systems"]}
        one = await _get(jp_fetch, "gpuwb", "api", "catalog", sorted(keys)[0])
        assert one["key"] == sorted(keys)[0] and "links" in one

    async def test_catalog_filters_and_bad_filters(self, jp_fetch):
        since = await _get(jp_fetch, "gpuwb", "api", "catalog", since="2020")
        assert since["count"] > 0 and all(s["year"] >= 2020 for s in since["systems"])
        bad = await _get(jp_fetch, "gpuwb", "api", "catalog", expect=400, category="no-such")
        assert "category" in bad["error"]
        year = await _get(jp_fetch, "gpuwb", "api", "catalog", expect=400, since="last year")
        assert "since" in year["error"]
        missing = await _get(jp_fetch, "gpuwb", "api", "catalog", "no-such-system-xyz",
                             expect=404)
        assert "error" in missing

    async def test_no_token_is_refused(self, jp_fetch, jp_base_url, jp_http_port):
        client = tornado.httpclient.AsyncHTTPClient()
        for path in ("gpuwb/api/status", "gpuwb/api/catalog", "gpuwb/api/catalog/reef"):
            with pytest.raises(tornado.httpclient.HTTPClientError) as raised:
                await client.fetch(f"http://127.0.0.1:{jp_http_port}{jp_base_url}{path}")
            assert raised.value.code == 403, path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestPoolDown:
    @pytest.fixture
    def jp_server_config(self, tmp_path):
        token = tmp_path / "token"
        token.write_text("whatever")
        return _config(f"tcp://127.0.0.1:{_free_port()}", token)

    async def test_down_is_a_clear_json_error(self, jp_fetch):
        body = await _status(jp_fetch, "down")
        assert body["state"] == "down", body
        assert "did not answer" in body["error"]
        assert body["down_for_s"] >= 0


class TestWrongToken:
    @pytest.fixture
    def jp_server_config(self, pool, tmp_path):
        token = tmp_path / "token"
        token.write_text("not-the-token")
        return _config(pool.address, token)

    async def test_a_refused_token_says_so(self, jp_fetch):
        body = await _status(jp_fetch, "down")
        assert body["state"] == "down" and "AuthenticationError" in body["error"], body


class TestNoPool:
    @pytest.fixture
    def jp_server_config(self, monkeypatch):
        monkeypatch.delenv("GPUWB_POOL", raising=False)
        monkeypatch.delenv("GPUWB_CLIENT_CONFIG", raising=False)
        return _config(None)

    async def test_no_pool_configured(self, jp_fetch):
        body = await _get(jp_fetch, "gpuwb", "api", "status")
        assert body == {"pool": None, "state": "none", "message": body["message"]}
        assert "embedded" in body["message"]


def test_watcher_keeps_one_connection_and_recovers(pool):
    watcher = PoolWatcher(pool.address, pool.token, interval=0.05, timeout=1.0)
    try:
        watcher.poll()
        first = watcher._sock
        watcher.poll()
        assert watcher._sock is first and watcher.snapshot()["state"] == "ok"
    finally:
        watcher._close()
    down = PoolWatcher(f"tcp://127.0.0.1:{_free_port()}", "t", interval=0.05, timeout=0.2)
    assert down.snapshot()["state"] == "starting"
    down.poll()
    snap = down.snapshot()
    assert snap["state"] == "down" and down._sock is None   # made anew at the next poll
