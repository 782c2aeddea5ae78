"""Ending one's own session from Jupyter (issue 39, item 8): ``DELETE
/gpuwb/api/sessions/<id>`` on a real Jupyter server (pytest-jupyter) whose extension
watches a real two-user pool (a users file; the server holds alice's token), real
sessions of both users on the NumPy device. Alice ends hers; bob's is refused; nothing
ends without the server's token, nor with its cookie alone (XSRF)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
import tornado.httpclient

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for

from tests.gpu_backend.test_users_pool import write_users

pytest_plugins = ("pytest_jupyter.jupyter_server",)


@pytest.fixture(scope="module")
def two_users(tmp_path_factory):
    path = tmp_path_factory.mktemp("users") / "users.toml"
    tokens = write_users(path, {"alice": {"weight": 2.0}, "bob": {}})
    with LocalPool(devices="cpu", users_file=path, lease_timeout=30) as pool:
        yield pool, tokens


@pytest.fixture
def jp_server_config(two_users, tmp_path):
    pool, tokens = two_users
    token = tmp_path / "alice-token"
    token.write_text(tokens["alice"])
    return {"ServerApp": {"jpserver_extensions": {"workbench.jupyter_extension": True}},
            "GpuWorkbench": {"pool": pool.address, "token_file": str(token),
                             "poll_interval": 0.2, "poll_timeout": 2.0}}


async def _delete(jp_fetch, session: str) -> tuple[int, dict]:
    try:
        response = await jp_fetch("gpuwb", "api", "sessions", session, method="DELETE")
    except tornado.httpclient.HTTPClientError as exc:
        response = exc.response
    return response.code, json.loads(response.body)


async def _sessions(jp_fetch) -> set[str]:
    response = await jp_fetch("gpuwb", "api", "status")
    return {s["session"] for s in json.loads(response.body).get("status", {}).get("sessions", [])}


async def test_a_user_ends_their_own_session_and_no_one_elses(jp_fetch, two_users):
    pool, tokens = two_users
    alices = kernelproxy.connect(pool.address, tokens["alice"], label="forgotten.ipynb")
    bobs = kernelproxy.connect(pool.address, tokens["bob"], label="train.py")
    try:
        code, body = await _delete(jp_fetch, bobs.id)
        assert code == 403 and "not yours" in body["error"], body
        assert float(module_for(bobs).arange(4).sum()) == 6   # bob's session goes on

        deadline = time.monotonic() + 30
        while alices.id not in await _sessions(jp_fetch):   # the watcher has seen it
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        code, body = await _delete(jp_fetch, alices.id)
        assert (code, body) == (200, {"session": alices.id, "ended": True})
        # the watcher asks again at once: the panel's next poll no longer lists it
        while alices.id in await _sessions(jp_fetch):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        assert bobs.id in await _sessions(jp_fetch)

        code, body = await _delete(jp_fetch, alices.id)   # once more: it is gone
        assert code == 404 and body["ended"] is False
    finally:
        alices.close()
        bobs.close()


async def test_no_end_without_the_token_or_xsrf(jp_fetch, jp_base_url, jp_http_port,
                                                jp_serverapp, two_users):
    pool, tokens = two_users
    with kernelproxy.connect(pool.address, tokens["alice"]) as alices:
        client = tornado.httpclient.AsyncHTTPClient()
        url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}gpuwb/api/sessions/{alices.id}"
        with pytest.raises(tornado.httpclient.HTTPClientError) as raised:
            await client.fetch(url, method="DELETE")
        assert raised.value.code == 403
        # a login cookie (what a browser holds) without the XSRF header: a cross-site page
        token = jp_serverapp.identity_provider.token
        login = await client.fetch(f"http://127.0.0.1:{jp_http_port}{jp_base_url}api/status"
                                   f"?token={token}")
        cookies = "; ".join(c.split(";", 1)[0] for c in login.headers.get_list("Set-Cookie"))
        assert cookies, "the server set no login cookie"
        with pytest.raises(tornado.httpclient.HTTPClientError) as raised:
            await client.fetch(url, method="DELETE", headers={"Cookie": cookies})
        assert raised.value.code == 403 and b"xsrf" in raised.value.response.body.lower()
        assert float(module_for(alices).arange(4).sum()) == 6   # still open
