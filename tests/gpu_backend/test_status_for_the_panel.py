"""What the pool's status tells the Lab panel (issue 39): what opened each session and how
long it has been idle, every user's weight with or without a session, a session's last
out-of-memory error, each device's samples over time, and ending one's own session by
token (never another user's).

A real pool with a users file (in-process front door), real worker processes on the NumPy
device, real sockets; waits are deadline polls, never sleeps that a slow machine could
outrun.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import zmq

import kernelproxy
from gpu_backend.hosts.device_samples import NOT_A_GPU
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.errors import NotAllowedError, OutOfMemoryError, ProtocolError
from kernelproxy.connection import session_label, signed_in_request
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from tests.gpu_backend.test_users_pool import MiB, eventually, write_users
from tests.paths import PROJECT_ROOT


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    path = tmp_path_factory.mktemp("users") / "users.toml"
    tokens = write_users(path, {"alice": {"weight": 2.0}, "bob": {},
                                "carol": {"memory": 16 * MiB}})
    with LocalPool(devices="cpu", users_file=path, lease_timeout=30) as p:
        yield p, tokens


def _end(pool, token: str, session: str) -> dict:
    return signed_in_request(zmq.Context.instance(), pool.address,
                             {"t": "end", "token": token, "session": session}, 10)


def _row(status: dict, sid: str) -> dict:
    return next(s for s in status["sessions"] if s["session"] == sid)


def test_the_label_defaults_to_the_notebook_then_the_script(tmp_path):
    assert SessionSettings.from_environ({"JPY_SESSION_NAME": "/home/a/nb.ipynb"}).notebook \
        == "/home/a/nb.ipynb"
    assert SessionSettings.from_environ({}).notebook is None
    assert session_label("mine", "/home/a/nb.ipynb") == "mine"
    assert session_label(None, "/home/a/nb.ipynb") == "/home/a/nb.ipynb"
    code = "from kernelproxy.connection import session_label; print(session_label(None, None))"
    script = tmp_path / "train.py"
    script.write_text(code)
    run = [sys.executable, "-c", code], [sys.executable, str(script)]
    seen = [subprocess.run(args, capture_output=True, text=True, check=True, cwd=PROJECT_ROOT,
                           env={**os.environ, "PYTHONPATH": os.pathsep.join(
                               filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))}
                           ).stdout.strip()
            for args in run]
    assert seen == ["python", str(script)]


def test_a_session_shows_its_label_to_its_user_only(pool):
    p, tokens = pool
    notebook = SessionSettings(notebook="/home/alice/forgotten.ipynb")
    with Session(p.address, tokens["alice"], settings=notebook) as mine, \
            kernelproxy.connect(p.address, tokens["bob"], label="train.py") as bobs:
        seen = mine.status()
        assert _row(seen, mine.id)["label"] == "/home/alice/forgotten.ipynb"
        assert _row(seen, bobs.id)["label"] == ""          # bob's script is bob's business
        assert _row(bobs.status(), bobs.id)["label"] == "train.py"
        assert _row(p.door.status(), mine.id)["label"] == "/home/alice/forgotten.ipynb"  # the pool's own


def test_idle_is_the_time_since_the_last_op_not_the_last_heartbeat(pool):
    p, tokens = pool
    with kernelproxy.connect(p.address, tokens["alice"]) as s:
        cp = module_for(s)
        assert float(cp.arange(10).sum()) == 45
        # heartbeats go on (every lease_timeout / 4), ops do not: idle grows past the time
        # since the last heartbeat, which starts again at each
        row = eventually(lambda: (r := _row(s.status(), s.id))["idle"] >= 2.0
                         and r["heartbeat"] < r["idle"] and r, timeout=60)
        assert float(cp.ones(5).sum()) == 5   # an op: idle starts again
        eventually(lambda: _row(s.status(), s.id)["idle"] < row["idle"], timeout=30)


def test_every_user_has_a_weight_in_status_with_or_without_a_session(pool):
    p, tokens = pool
    with kernelproxy.connect(p.address, tokens["bob"]) as s:
        status = s.status()
        accounts = {a["user"]: a for a in status["accounts"]}
        assert set(accounts) == {"alice", "bob", "carol"}
        assert accounts["alice"]["weight"] == 2.0 and accounts["alice"]["sessions"] == 0
        assert accounts["bob"]["sessions"] == 1 and accounts["bob"]["weight"] == 1.0
        assert accounts["carol"]["memory_quota"] == 16 * MiB


def test_an_out_of_memory_error_shows_in_status(pool):
    p, tokens = pool
    with kernelproxy.connect(p.address, tokens["carol"]) as s:
        cp = module_for(s)
        x = cp.ones(12 * MiB // 8)   # 12 of carol's 16 MiB: near her quota
        assert _row(s.status(), s.id)["oom_ago"] is None
        with pytest.raises(OutOfMemoryError):
            (x + 1).get()            # 12 more: past it
        row = eventually(lambda: (r := _row(s.status(), s.id))["oom_ago"] is not None and r,
                         timeout=30)
        assert row["memory_used"] >= 12 * MiB
        carol = next(a for a in s.status()["accounts"] if a["user"] == "carol")
        assert carol["oom_ago"] is not None and carol["memory_used"] >= 12 * MiB
        assert float(x[:4].sum()) == 4   # the session goes on


def test_a_user_ends_their_own_session_by_token_never_another_users(pool):
    p, tokens = pool
    alices = kernelproxy.connect(p.address, tokens["alice"], label="forgotten.ipynb")
    bobs = kernelproxy.connect(p.address, tokens["bob"])
    try:
        with pytest.raises(NotAllowedError, match="not yours"):
            _end(p, tokens["bob"], alices.id)
        assert float(module_for(alices).arange(3).sum()) == 3   # untouched
        with pytest.raises(ProtocolError):
            _end(p, tokens["bob"], 12)
        assert _end(p, tokens["alice"], "0" * 16) == {"ok": True, "ended": False}

        assert _end(p, tokens["alice"], alices.id) == {"ok": True, "ended": True}
        assert alices.id not in {s["session"] for s in p.door.status()["sessions"]}
        ended = next(e for e in p.door.status()["ended"] if e["session"] == alices.id)
        assert ended["reason"] == "ended by its user (alice)"
        with pytest.raises(kernelproxy.SessionLostError):   # its client learns it
            eventually(lambda: float(module_for(alices).arange(3).sum()) and False,
                       timeout=30, retry=())
        assert float(module_for(bobs).arange(3).sum()) == 3   # bob's goes on
        assert _end(p, tokens["alice"], alices.id)["ended"] is False   # (ended already)
    finally:
        alices.close()
        bobs.close()


def test_devices_are_sampled_for_the_panels_plots(pool):
    p, tokens = pool
    with kernelproxy.connect(p.address, tokens["alice"]) as s:
        cp = module_for(s)
        y = cp.ones(1 << 20)   # 8 MiB held
        z = cp.ones((256, 256))
        for _ in range(20):
            z = (z @ z) / 256.0
        assert float(z.sum()) > 0

        def sampled():
            samples = s.status(history=60)["device_history"]["cpu:0"]
            assert samples["memory"] and samples["memory"][-1] >= y.nbytes
            assert any(b for b in samples["busy"] if b)   # the device ran our work
            return samples
        samples = eventually(sampled, timeout=60)
        assert samples["step"] == 2.0 and len(samples["busy"]) == len(samples["memory"])
        assert all(b is None or 0 <= b <= 1 for b in samples["busy"])
        assert samples["utilization"] is None and samples["nvml_memory"] is None
        assert samples["nvml"] == NOT_A_GPU
        assert "device_history" not in s.status()   # only with the history: the poll stays small
