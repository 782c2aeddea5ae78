"""Users in a running pool: tokens, quotas, reloads, accounting and weighted shares.

Real pools (in-process front door, or ``gpuwb-backend serve`` in a subprocess when
the test kills it), real worker processes on the NumPy device, real sockets.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.accounting.usage import read_usage
from gpu_backend.accounting.users import User, hash_token, load_users, new_token, save_users
from kernelproxy.modules import module_for

from tests.differential import TEST_DEVICES
from tests.contended_shares import contended_seconds, wait_for_device_work
from tests.waiting import until

MiB = 1 << 20


def write_users(path: Path, spec: dict[str, dict]) -> dict[str, str]:
    """Write a users file; returns each user's token."""
    tokens, users = {}, {}
    for name, fields in spec.items():
        tokens[name] = fields.pop("token", None) or new_token(name)
        users[name] = User(name=name, token_hash=hash_token(tokens[name]), **fields)
    save_users(path, users)
    return tokens


def eventually(check, timeout=10.0, interval=0.05, retry=(AssertionError,)):
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
        except retry:
            if time.monotonic() > deadline:
                raise
        else:
            if result is not False:
                return result
            if time.monotonic() > deadline:
                raise AssertionError("condition not met in time")
        time.sleep(interval)


@pytest.fixture
def users_pool(tmp_path):
    path = tmp_path / "users.toml"
    tokens = write_users(path, {"alice": {"weight": 2.0}, "bob": {"sessions": 1},
                                "carol": {"memory": 16 * MiB}})
    with LocalPool(devices=TEST_DEVICES, users_file=path, lease_timeout=20) as pool:
        yield pool, path, tokens


def test_each_user_has_their_own_token(users_pool):
    pool, _path, tokens = users_pool
    with kernelproxy.connect(pool.address, tokens["alice"], user="alice@laptop") as s:
        assert float(module_for(s).arange(4).sum()) == 6.0
        status = s.status()
        assert status["you"] == "alice" and status["users_mode"] == "file"
        assert [(r["user"], r["client"]) for r in status["sessions"]] == [("alice", "alice@laptop")]
        (row,) = status["users"]
        assert (row["user"], row["weight"], row["target_share"]) == ("alice", 2.0, 1.0)
    for wrong in ("alice", tokens["alice"] + "x", "nobody." + tokens["alice"].split(".")[1],
                  tokens["bob"].replace("bob.", "alice.")):
        with pytest.raises(kernelproxy.AuthenticationError, match="wrong or missing token"):
            kernelproxy.connect(pool.address, wrong)


def test_the_sessions_quota_is_enforced_and_names_the_quota(users_pool):
    pool, _path, tokens = users_pool
    with kernelproxy.connect(pool.address, tokens["bob"]) as first:
        with pytest.raises(kernelproxy.QuotaExceededError, match="bob may have 1 session at once"):
            kernelproxy.connect(pool.address, tokens["bob"])
        assert float(module_for(first).ones(3).sum()) == 3.0     # the first one goes on
        with kernelproxy.connect(pool.address, tokens["alice"]) as other:  # others too
            assert float(module_for(other).ones(2).sum()) == 2.0
    with kernelproxy.connect(pool.address, tokens["bob"]) as again:   # closed: room again
        assert again.id


def _zeros(session, mib: int):
    """*mib* MiB of zeros in *session* (module_for sends new arrays to that session: there is
    one such choice per process)."""
    return module_for(session).zeros(mib * MiB // 8)


def _granted(session) -> int:
    return next(r["memory_granted"] for r in session.status()["sessions"] if r["session"] == session.id)


def test_the_memory_quota_spans_a_users_sessions(users_pool):
    pool, _path, tokens = users_pool
    a = kernelproxy.connect(pool.address, tokens["carol"])
    b = kernelproxy.connect(pool.address, tokens["carol"])
    try:
        big = _zeros(a, 10)                                  # 10 MiB of carol's 16
        a.sync()
        with pytest.raises(kernelproxy.OutOfMemoryError) as caught:
            _zeros(b, 8).sum().item()                        # would make 18 MiB
        text = str(caught.value)   # the quota, and the usage against it
        assert text.startswith("Out of memory allocating 8,388,608 bytes: user carol's memory "
                               "quota is 16 MiB over all their sessions: this session uses "), text
        # (what the other holds: its 10 MiB in use, and on a GPU up to a MiB of slack)
        assert re.search(r" and their 1 other session holds 1[01](\.[0-9]+)? MiB$", text), text
        del caught
        assert float(_zeros(b, 1).sum()) == 0.0              # b goes on within what is free
        del big
        a.sync()
        eventually(lambda: _granted(a) <= 2 * MiB, timeout=10)   # a, idle, hands memory back
        assert float(_zeros(b, 8).sum()) == 0.0              # and now b's allocation fits
        assert _granted(a) + _granted(b) <= 16 * MiB
        from workbench.pool_views import users_view
        from workbench.views import to_text
        # wide enough that no cell wraps or is cut, whatever the figures' widths this time
        text = to_text(users_view(a.status()), width=400)
        assert "carol (you)" in text and "of 16.0 MiB" in text and "2 sessions" not in text
    finally:
        a.close()
        b.close()


def test_a_new_session_gets_the_memory_another_holds_but_does_not_use(users_pool):
    """carol's first session grew its grant to her whole quota, then freed most of it: her
    second session is not refused for memory the first holds and does not use (the pool
    asks the first to hand it back, and the hello waits for the answer)."""
    pool, _path, tokens = users_pool
    a = kernelproxy.connect(pool.address, tokens["carol"])
    try:
        big, kept = _zeros(a, 13), _zeros(a, 2)              # 15 of carol's 16 MiB
        a.sync()
        assert _granted(a) >= 15 * MiB
        del big
        a.sync()                                             # a uses 2 MiB and holds ~16
        with kernelproxy.connect(pool.address, tokens["carol"]) as b:
            assert float(_zeros(b, 8).sum()) == 0.0
        assert float(kept.sum()) == 0.0
    finally:
        a.close()


def test_reload_adds_reweights_and_removes_users(users_pool):
    pool, path, tokens = users_pool
    alice = kernelproxy.connect(pool.address, tokens["alice"])
    try:
        users = load_users(path)
        dave = new_token("dave")
        users["dave"] = User(name="dave", token_hash=hash_token(dave), weight=5)
        users["alice"] = users["alice"].model_copy(update={"weight": 3.0})
        save_users(path, users)
        with eventually(lambda: kernelproxy.connect(pool.address, dave), timeout=5,
                        retry=(kernelproxy.AuthenticationError,)) as d:
            assert float(module_for(d).ones(2).sum()) == 2.0
            weights = {r["user"]: r["weight"] for r in alice.status()["users"]}
            assert weights == {"alice": 3.0, "dave": 5.0}
        path.write_text("this is [not toml")           # a broken file: the users stay
        time.sleep(1.5)
        assert float(module_for(alice).ones(2).sum()) == 2.0
        users.pop("dave")
        users.pop("alice")
        save_users(path, users)                         # alice removed: her session ends
        eventually(lambda: alice.heartbeat.lost is not None or alice.closed, timeout=20)
        with pytest.raises(kernelproxy.AuthenticationError):
            kernelproxy.connect(pool.address, tokens["alice"])
        with pytest.raises(kernelproxy.AuthenticationError):
            kernelproxy.connect(pool.address, dave)
    finally:
        try:
            alice.close()
        except kernelproxy.PoolError:
            pass


def _serve(tmp_path: Path, users: Path, log: Path, *extra: str,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OPENBLAS_NUM_THREADS": "1", **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_backend.cli", "serve", "--listen", "tcp://127.0.0.1:0",
         "--devices", "cpu", "--users-file", str(users), "--usage-log", str(log),
         "--spare-workers", "2", *extra], stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert "listening on" in line, line
    return proc, line.split()[4]


def _work(address: str, token: str, steps: int) -> None:
    """*steps* iterations of four 150² GEMMs and a read: a count, not a time, so that what
    the log must hold does not follow the host's speed (a 1 s loop on a loaded 2-core
    machine was charged 0.07 s of device time, under the 0.1 s the test once asked)."""
    with kernelproxy.connect(address, token) as s:
        cp = module_for(s)
        a = cp.random.rand(150, 150)
        for _ in range(steps):
            for _ in range(4):
                a = a @ a * 0.01
            float(a[0, 0])


def _logged_ops(log: Path, session: str) -> int:
    """The ops of *session* in the usage log so far (0: none yet)."""
    if not log.exists():
        return 0
    return sum(row["ops"] for row in read_usage(log, by="session") if row["session"] == session)


def test_usage_log_survives_kill_9_and_a_restart(tmp_path):
    users, log = tmp_path / "users.toml", tmp_path / "usage.jsonl"
    tokens = write_users(users, {"erin": {}})
    proc, address = _serve(tmp_path, users, log)
    try:
        _work(address, tokens["erin"], 40)
        with kernelproxy.connect(address, tokens["erin"]) as s:   # a session still open...
            float(module_for(s).ones(3).sum())
            # ...its op reported and flushed (the log is written once a second)
            assert until(lambda: _logged_ops(log, s.id) > 0, 30, step=0.05)
            proc.send_signal(signal.SIGKILL)                       # then the pool is killed
            proc.wait(10)
    finally:
        proc.kill()
    rows = read_usage(log)
    (row,) = rows
    # (the first session's 40 steps of 4 GEMMs, multiplies and a read each, then one more op)
    assert row["user"] == "erin" and row["sessions"] == 2 and row["device_s"] > 0
    assert row["ops"] > 160 and not rows.skipped
    first_device_time = row["device_s"]
    proc, address = _serve(tmp_path, users, log)                   # the same log, appended
    try:
        _work(address, tokens["erin"], 20)
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
    (row,) = read_usage(log)
    assert row["sessions"] == 3 and row["device_s"] > first_device_time
    cli = subprocess.run([sys.executable, "-m", "gpu_backend.cli", "usage", "--log", str(log),
                          "--json"], capture_output=True, text=True)
    assert cli.returncode == 0 and '"erin"' in cli.stdout


#: Batches a loop keeps queued in its worker: tens of milliseconds of work, so that a user
#: stays backlogged in the pool while the host does not run its client's thread.
QUEUED_BATCHES = 16


#: the device seconds the two users' loops run for together (at ~2 ms a quantum, hundreds of
#: quanta each), however long the host takes to give the device that much: 5 s of wall time
#: gave the device 1.2 s of work, and each user ~47 grants, under three busy loops beside
#: the suite, and the light user read 0.304 against 0.25 +- 0.05
SHARED_WORK = 3.0
#: ... and the longest they may take (a test that never got there fails on its shares)
MAX_RUN = 60.0


def test_two_users_1_to_3_share_the_device_by_weight(tmp_path):
    """Closed loops of ~2 ms ops. The arbiter hands the device over every 2 ms of device
    time, and the loops run until the device has done SHARED_WORK seconds of their work, so
    each user gets hundreds of quanta however loaded the host. Each loop keeps QUEUED_BATCHES
    batches in its worker, and the shares are read from the pool's own accounting while both
    users had work there (tests/contended_shares.py). With two batches queued, a loop whose
    client thread the host did not run for a while had no work in the pool, the other rightly
    had the device alone, and on a loaded 2-core machine the light user's share of the whole
    run read 0.30 once, 0.46 under two busy loops; now 0.25-0.26 under them."""
    users, log = tmp_path / "users.toml", tmp_path / "usage.jsonl"
    trace = tmp_path / "arbiter.jsonl"
    tokens = write_users(users, {"light": {"weight": 1}, "heavy": {"weight": 3}})
    proc, address = _serve(tmp_path, users, log, "--policy", "fair",
                           env={"GPUWB_ARBITER_TRACE": str(trace)})
    try:
        sessions = {u: kernelproxy.connect(address, tokens[u]) for u in tokens}
        start = threading.Barrier(len(sessions))
        stop_at = [0.0]

        # arrays made here, one session at a time; in the threads, an array's ops go to its
        # own session (module_for's choice of session is one per process)
        arrays = {u: module_for(s).random.rand(200, 200) for u, s in sessions.items()}

        def loop(s, a):
            float(a.sum())
            start.wait()
            pending = []
            while time.monotonic() < stop_at[0]:
                for _ in range(3):
                    a = (a @ a) * 0.005
                pending.append(s.value_later("float", a[0, 0]))
                s.flush()
                if len(pending) > QUEUED_BATCHES:   # (a deep queue: see the docstring)
                    s.result(pending.pop(0))
            for seq in pending:
                s.result(seq)

        stop_at[0] = time.monotonic() + MAX_RUN
        threads = [threading.Thread(target=loop, args=(s, arrays[u])) for u, s in sessions.items()]
        for t in threads:
            t.start()
        time.sleep(2.5)   # both backlogged: their target shares (after both loops end,
        # whoever stopped last is alone, at 1.0). A status shares the device among the users
        # with work queued at that instant, and on a loaded 2-core VM a loop is now and then
        # between two batches (light 0.0, heavy 1.0): look again, within the loops' run
        deadline = time.monotonic() + 1.5
        while True:
            status = sessions["light"].status()
            if all(r["target_share"] for r in status["users"]) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        wait_for_device_work(sessions.values(), SHARED_WORK, stop_at[0])
        stop_at[0] = time.monotonic()
        for t in threads:
            t.join()
        for s in sessions.values():
            s.close()
    finally:
        proc.terminate()
        proc.wait(20)
    used = {r["user"]: r["device_s"] for r in read_usage(log)}
    assert used["light"] + used["heavy"] > 1.0, used   # the device was busy for a while
    contended = contended_seconds(trace)
    total = contended.get("light", 0.0) + contended.get("heavy", 0.0)
    assert total > 0.5, (contended, used)              # hundreds of 2 ms quanta competed
    assert contended["light"] / total == pytest.approx(0.25, abs=0.05), (contended, used)
    targets = {r["user"]: r["target_share"] for r in status["users"]}
    assert targets == pytest.approx({"light": 0.25, "heavy": 0.75})


@pytest.mark.parametrize("policy", ["fifo", "none"])
def test_the_other_policies_serve_sessions_side_by_side(policy):
    with LocalPool(devices="cpu", policy=policy, spare_workers=2) as pool:
        first = kernelproxy.connect(pool.address, pool.token)
        second = kernelproxy.connect(pool.address, pool.token)
        try:
            x = module_for(first).arange(100.0)
            y = module_for(second).arange(10.0)
            results = {}

            def run(name, a, n):
                for _ in range(50):
                    a = a + 1
                results[name] = float(a.sum())

            threads = [threading.Thread(target=run, args=("x", x, 100)),
                       threading.Thread(target=run, args=("y", y, 10))]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert results == {"x": sum(range(100)) + 5000.0, "y": sum(range(10)) + 500.0}
            assert first.status()["policy"] == policy
        finally:
            first.close()
            second.close()
