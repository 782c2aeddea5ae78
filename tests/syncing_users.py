"""Users whose loops sync every few milliseconds, each in its own session of a served pool
on the NumPy device, with the arbiter's decisions traced: what the served-pool tests of the
``fair`` and ``share`` policies run (tests/gpu_backend/test_release_at_read.py,
tests/gpu_backend/test_share_pool.py) before they read the trace."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import kernelproxy
from kernelproxy.modules import module_for
from tests.contended_shares import wait_for_device_work
from tests.gpu_backend.test_users_pool import _serve, write_users

__all__ = ["N", "SHARED_WORK", "run_syncing_users", "syncing_loop"]

#: the syncing loops' GEMM size on the NumPy device: four of them take far longer than the
#: client's round trip from one read to its next batch (at 160², about as long: a user of
#: weight 4 was between two batches half the time, and the others rightly had the device,
#: 0.16 / 0.34 / 0.48 for 1:2:4), so the users compete as four 2 ms GEMMs and a read do on
#: a GPU
N = 256
#: the device seconds of the users' work a run lasts for at least (their loops go on past
#: *seconds* until the pool has counted that much: a host under busy loops gave a 5 s run
#: of another shares test a quarter of that and ~47 grants a user, test_users_pool.py)
SHARED_WORK = 2.0
#: ... and the longest a run may take
MAX_RUN = 60.0


def syncing_loop(a, b, barrier: threading.Barrier, stop_at: list, failed: list,
                 gemms: int = 4) -> None:
    """One user's loop: *gemms* ``a @ b`` and a read of one element, until ``stop_at[0]``
    (monotonic seconds), after every user's first read (*barrier*); an error is put in
    *failed* and the barrier broken (a thread's error would go unseen)."""
    try:
        float(a[0, 0])
        barrier.wait()
        while time.monotonic() < stop_at[0]:
            for _ in range(gemms):
                c = a @ b
            float(c[0, 0])   # the sync: nothing queued until the value is back
    except BaseException as exc:
        failed.append(exc)
        barrier.abort()


def run_syncing_users(tmp_path: Path, weights: dict, policy: str, seconds: float = 5.0, *,
                      turns: bool = False, n: int = N, gemms: int = 4,
                      work: float = SHARED_WORK, env: dict | None = None) -> Path:
    """Each user of *weights* a loop of four N² GEMMs and a read of one element, for
    *seconds* and until the pool has counted *work* device seconds of theirs (at most
    MAX_RUN: a loaded host gives the device less of each second), in a pool under *policy*;
    the arbiter's trace (its path). *turns*: the NumPy device's sessions run their ops in
    turns, as one GPU's do (devices/host_turns.py); *env*: the pool's further settings
    (``GPUWB_*`` variables)."""
    users, log = tmp_path / "users.toml", tmp_path / "usage.jsonl"
    trace = tmp_path / "arbiter.jsonl"
    tokens = write_users(users, {u: {"weight": w} for u, w in weights.items()})
    env = {**(env or {}), "GPUWB_ARBITER_TRACE": str(trace)}
    if turns:
        env["GPUWB_NUMPY_DEVICE_TURNS"] = "1"
    proc, address = _serve(tmp_path, users, log, "--policy", policy, env=env)
    try:
        sessions = {u: kernelproxy.connect(address, tokens[u]) for u in weights}
        arrays = {u: (module_for(s).random.rand(n, n), module_for(s).random.rand(n, n))
                  for u, s in sessions.items()}
        began = time.monotonic()
        start, stop_at, failed = threading.Barrier(len(sessions)), [began + MAX_RUN], []
        threads = [threading.Thread(target=syncing_loop,
                                    args=(*arrays[u], start, stop_at, failed, gemms))
                   for u in weights]
        for t in threads:
            t.start()
        time.sleep(seconds)
        wait_for_device_work(sessions.values(), work, began + MAX_RUN, lambda: bool(failed))
        stop_at[0] = time.monotonic()
        for t in threads:
            t.join()
        assert not failed, failed
        for s in sessions.values():
            s.close()
    finally:
        proc.terminate()
        proc.wait(20)
    return trace
