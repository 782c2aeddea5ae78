"""A flood of wrong tokens for a real user's name starves no one.

Checking a token costs a full scrypt. The flood (many connections sending hellos with
wrong tokens for ``alice`` as fast as the pool answers) runs in a process of its own
against a pool in a process of its own, while a bystander (``bob``, signed in before)
keeps working with a short lease. The pool must keep answering the bystander's pings
and heartbeats, hash only as often as its back-off allows, count the refusals, and let
alice in once the flood is over.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

import kernelproxy
from gpu_backend.door.auth_gate import BACKOFF_BASE, BACKOFF_CAP
from gpu_backend.served import ServedPool
from kernelproxy.connection import door_request
from kernelproxy.modules import module_for

from tests.gpu_backend.test_users_pool import write_users

FLOOD_SECONDS = 4.0
CONNECTIONS = 50
LEASE = 3.0   # a door held for longer than this would end the bystander's session


def _metrics(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    return {(s.name, *sorted(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _most_hashes(seconds: float) -> int:
    """How many hashes the back-off allows one name from one source in *seconds*."""
    hashes, at = 0, 0.0
    while at <= seconds:
        hashes += 1
        at += min(BACKOFF_BASE * 2 ** (hashes - 1), BACKOFF_CAP)
    return hashes


def test_a_wrong_token_flood_for_a_real_name_leaves_the_pool_serving(tmp_path):
    users = tmp_path / "users.toml"
    tokens = write_users(users, {"alice": {}, "bob": {}})
    with ServedPool("fair", "cpu", "--lease-timeout", str(LEASE), users_file=users,
                    metrics=True) as pool:
        bystander = kernelproxy.connect(pool.address, tokens["bob"])
        cp = module_for(bystander)
        kept = cp.arange(1000.0)
        float(kept.sum())
        flood = subprocess.Popen([sys.executable, "-m", "tests.hostile", "flood", pool.address, "alice",
                                  str(CONNECTIONS), str(FLOOD_SECONDS)], stdout=subprocess.PIPE, text=True)
        pings, ops = [], 0
        try:
            ctx = bystander.ctx
            deadline = time.monotonic() + FLOOD_SECONDS
            while time.monotonic() < deadline:
                started = time.monotonic()
                door_request(ctx, pool.address, {"t": "ping"}, timeout=LEASE)  # raises if unanswered
                pings.append(time.monotonic() - started)
                assert float((kept + 1).sum()) == 500500.0
                ops += 1
                time.sleep(0.05)
            result = json.loads(flood.communicate(timeout=60)[0])
        finally:
            flood.kill()
        # the flood was real: every connection sent, and what was answered was refused
        # (the tarpit answers a connection once per back-off period: few answers in 4 s)
        assert result["sent"] >= CONNECTIONS and result["answered"] >= 10, result
        assert set(result["answers"]) <= {"AuthenticationError", "SignInThrottledError"}, result
        # the bystander never lost its session (its heartbeats were answered in time)
        assert not bystander.closed and not bystander.heartbeat.lost
        np.testing.assert_array_equal(kept.get(), np.arange(1000.0))
        assert ops > 5 and max(pings) < LEASE
        # one source, one name: hashed only as often as the back-off allows; refusals counted
        def refused(samples: dict) -> float:
            return sum(samples[("gpuwb_auth_refusals_total", ("reason", r))]
                       for r in ("wrong", "throttled", "busy"))

        samples = _metrics(pool.metrics_port)   # (published once a second: look until current)
        published_by = time.monotonic() + 30
        while refused(samples) < result["answered"] and time.monotonic() < published_by:
            time.sleep(0.2)
            samples = _metrics(pool.metrics_port)
        assert refused(samples) >= result["answered"]
        hashed = samples[("gpuwb_auth_hashes_total",)]
        assert 1 <= hashed <= _most_hashes(FLOOD_SECONDS + 5) + 1, hashed   # (+ bob's own)
        # and alice, with her own token, gets in once it is over (waiting out the back-off)
        with kernelproxy.connect(pool.address, tokens["alice"], timeout=60) as alice:
            assert float(module_for(alice).ones(3).sum()) == 3.0
        bystander.close()


def test_the_same_wrong_token_again_is_refused_without_hashing(tmp_path):
    users = tmp_path / "users.toml"
    write_users(users, {"alice": {}})
    with ServedPool("fair", "cpu", users_file=users, metrics=True) as pool:
        wrong = "alice." + "x" * 43
        errors = []

        def attempt() -> None:
            try:
                kernelproxy.connect(pool.address, wrong, timeout=30)
            except kernelproxy.AuthenticationError as exc:
                errors.append(str(exc))

        threads = [threading.Thread(target=attempt) for _ in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == ["wrong or missing token"] * 5
        published_by = time.monotonic() + 30
        while _metrics(pool.metrics_port)[("gpuwb_auth_refusals_total", ("reason", "wrong"))] < 5 \
                and time.monotonic() < published_by:
            time.sleep(0.2)
        assert _metrics(pool.metrics_port)[("gpuwb_auth_hashes_total",)] == 1
