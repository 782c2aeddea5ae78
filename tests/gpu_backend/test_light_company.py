"""``share``'s light company (the pool's ``share_light_company``, on by default;
arbiter/service.py LIGHT_COMPANY): a session whose company on its device is only light users
(away most of the time, short batches: SharePolicy.weighs) is told so (``p``: false) and
launches its long replays whole through their graphs instead of re-running them op by op,
paced (worker/stretch_replay.py, ``pacing_bound``). Pacing is there so that a user held back stops
within its lead, and a light user holds nobody back; paced beside company, a 2048² GEMM
user lost 0.03-0.05 of its rate (H200 run 337).

The policy on the tests' own clock; the arbiter's thread with real leases over its socket,
its clock the real one plus jumps that stand for a light user's gaps (so that a loaded host
makes no gap shorter); and a served pool on the NumPy device whose own counts
(``memory_info()["stretches"]``: graphed, paced) say which path each replay took."""

from __future__ import annotations

import time

import numpy as np
import zmq

from gpu_backend.arbiter.service import Arbiter
from gpu_backend.arbiter.share import LIGHT_BATCH, LIGHT_BURST, SharePolicy
from gpu_backend.config import PoolSettings
from gpu_backend.served import ServedPool
from gpu_backend.worker.lease import DeviceLease
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from tests.waiting import until

from .test_swap import _wait

LIGHT_GAP = 0.004


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _batches(policy: SharePolicy, clock: Clock, sid: str, batch: float, gap: float,
             times: int) -> None:
    """*sid* runs *times* batches of *batch* seconds, *gap* seconds apart."""
    for _ in range(times):
        policy.want(sid, holding=sid in policy.admitted)
        clock.now += batch
        policy.idle(sid, policy.sessions[sid].charged + batch)
        clock.now += gap


def test_a_user_weighs_until_its_history_is_light_and_again_once_it_is_not():
    clock = Clock()
    policy = SharePolicy(clock, light_gap=LIGHT_GAP)
    policy.attach("a", "ann", 1.0)
    policy.attach("i", "ian", 1.0)
    assert policy.weighs("a") and policy.weighs("i")        # nothing known: both weigh
    _batches(policy, clock, "i", 0.0003, 0.010, 3)          # an interactive user's requests
    assert not policy.weighs("i")
    _batches(policy, clock, "i", 2 * LIGHT_BATCH, 0.0001, 8)   # a loop that syncs
    assert policy.weighs("i")
    assert policy.weighs("nobody")


def test_without_a_light_gap_every_user_weighs():
    clock = Clock()
    policy = SharePolicy(clock)                             # (a policy made alone: no light gap)
    policy.attach("i", "ian", 1.0)
    _batches(policy, clock, "i", 0.0003, 0.010, 4)
    assert policy.weighs("i")


# ---------------------------------------------------------------- the arbiter and its leases

class JumpingClock:
    """A clock that moves only by the test's jumps: a batch or a gap lasts what the test
    says, however slow the host (the arbiter's thread still wakes by the real time it
    polls for, and finds the jump there)."""

    def __init__(self) -> None:
        self.base = time.monotonic()
        self.offset = 0.0

    def __call__(self) -> float:
        return self.base + self.offset


def _pool(light_company: bool, clock: JumpingClock):
    ctx = zmq.Context()
    arbiter = Arbiter(ctx, "share", ["cpu:0"], clock=clock, light_gap=LIGHT_GAP,
                      company_idle=0.0, light_company=light_company).start()
    leases = [DeviceLease(ctx, arbiter.address, w, arbiter.baton_path) for w in ("wa", "wb")]
    arbiter.attach("wa", "cpu:0", "sa", "ann", 1.0)
    arbiter.attach("wb", "cpu:0", "sb", "ian", 1.0)
    busy, notebook = leases
    assert busy.acquire(0.0, lambda: False) and notebook.acquire(0.0, lambda: False)
    return ctx, arbiter, leases


def _close(ctx, arbiter, leases) -> None:
    for lease in leases:
        lease.close()
    arbiter.stop()
    ctx.term()


def _paced(lease: DeviceLease) -> bool:
    lease.read(0.0)
    return lease.paced


def _runnable(arbiter: Arbiter, sid: str, runnable: bool) -> None:
    """Wait till the arbiter has read *sid*'s last word (its want or its idle): a jump of
    the clock before that would fall inside the batch or gap it ends."""
    sessions = arbiter.policies["cpu:0"].sessions
    assert until(lambda: sessions[sid].runnable is runnable, seconds=10)


def _light_request(arbiter: Arbiter, notebook: DeviceLease, clock: JumpingClock) -> None:
    """One interactive request: 20 ms away (a jump of the clock), then a batch said at
    once to be over (no time on the clock): the user ends away, as between its requests."""
    clock.offset += 0.020
    notebook.busy_again()
    _runnable(arbiter, "sb", True)
    notebook.idle(0.0)
    _runnable(arbiter, "sb", False)


def _long_batch(arbiter: Arbiter, notebook: DeviceLease, clock: JumpingClock) -> None:
    """A loop's batch: work again at once, 20 ms of it (a jump), over."""
    notebook.busy_again()
    _runnable(arbiter, "sb", True)
    clock.offset += 0.020
    notebook.idle(0.0)
    _runnable(arbiter, "sb", False)


def test_a_worker_beside_a_light_user_is_told_not_to_pace_and_to_pace_once_it_is_heavy():
    clock = JumpingClock()
    ctx, arbiter, (busy, notebook) = _pool(True, clock)
    try:
        assert until(lambda: not _told_alone(busy))
        assert _paced(busy)                                 # a new user weighs
        assert until(lambda: (_light_request(arbiter, notebook, clock), not _paced(busy))[1], seconds=10)
        assert _paced(notebook)                             # (its company, ann, weighs)
        assert until(lambda: (_long_batch(arbiter, notebook, clock), _paced(busy))[1], seconds=10)
    finally:
        _close(ctx, arbiter, [busy, notebook])


def test_a_light_users_batch_past_its_burst_has_its_company_paced_until_it_ends():
    """A light user's request that runs past LIGHT_BURST holds the others back (share's
    _light is over): the worker beside it is told to pace from then, with no word from
    either worker (the policy's deadline), and told not to once the request ends."""
    clock = JumpingClock()
    ctx, arbiter, (busy, notebook) = _pool(True, clock)
    try:
        assert until(lambda: not _told_alone(busy))
        assert until(lambda: (_light_request(arbiter, notebook, clock), not _paced(busy))[1], seconds=10)
        policy = arbiter.policies["cpu:0"]
        notebook.busy_again()                               # a request: its burst
        _runnable(arbiter, "sb", True)
        assert not policy.weighs("sb")
        time.sleep(0.05)
        assert not _paced(busy)
        clock.offset += LIGHT_BURST + 0.001                 # past its burst, nobody speaks
        assert until(lambda: _paced(busy), seconds=10)
        assert policy.weighs("sb")
        notebook.idle(0.0)                                  # the request over
        assert until(lambda: not _paced(busy), seconds=10)
    finally:
        _close(ctx, arbiter, [busy, notebook])


def test_without_light_company_a_worker_is_paced_beside_any_company():
    clock = JumpingClock()
    ctx, arbiter, (busy, notebook) = _pool(False, clock)
    try:
        assert until(lambda: not _told_alone(busy))
        for _ in range(12):
            _light_request(arbiter, notebook, clock)
        time.sleep(0.1)
        assert _paced(busy)
        assert not arbiter.policies["cpu:0"].weighs("sb")   # (light: only not told)
    finally:
        _close(ctx, arbiter, [busy, notebook])


def _told_alone(lease: DeviceLease) -> bool:
    lease.read(0.0)
    return lease.alone


def test_the_pool_setting_reaches_the_arbiter():
    assert PoolSettings().company_options()["light_company"] is True
    assert PoolSettings(share_light_company=False).company_options()["light_company"] is False


# ---------------------------------------------------------------- a served pool, end to end

def _step(v, m) -> float:
    return float(((v @ m) @ m).sum())   # two 384² GEMMs on the host: milliseconds each


def _replays_beside_a_light_user(light_company: bool, cycles: int | None):
    """Session ``a`` replays a held step, alone and then beside ``b``, another user's session
    on the same device, that makes a small request every 20 ms or so. Every replay in
    company is paced where the setting is off (``GPUWB_UNPACED_REPLAY_US=0``: the NumPy
    device measures next to no device time, so no estimate reaches the 4 ms a GPU's would);
    b is company all the while (``company_idle_ms`` a minute). With *cycles*, that many of
    b's requests; else until a replay is graphed after b's history is light. Returns a's
    counts as b's requests began and at the end."""
    env = {"GPUWB_UNPACED_REPLAY_US": "0", "GPUWB_COMPANY_IDLE_MS": "60000",
           "GPUWB_SHARE_LIGHT_COMPANY": "1" if light_company else "0"}
    with ServedPool("share", "cpu", env=env) as pool:
        a = Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False))
        b = None
        try:
            cp = module_for(a)
            host = np.random.default_rng(3).random((384, 384))
            m = cp.asarray(host)
            expected = float(((host @ host) @ host).sum())
            for _ in range(8):   # alone: held, then replayed through its graphs
                assert _step(m, m) == expected
            assert a.memory_info()["stretches"]["graphed"] >= 1

            b = Session(pool.address, pool.token)
            small = module_for(b).ones(3)   # (its first batch: a new user weighs)
            paced = a.memory_info()["stretches"]["paced"]

            def step() -> dict:
                assert _step(m, m) == expected
                return a.memory_info()["stretches"]
            _wait(lambda: step()["paced"] > paced, "a replay paced beside a new user")

            def cycle() -> dict:
                assert float(small.sum()) == 3.0
                counts = step()
                time.sleep(0.02)
                return counts

            before = a.memory_info()["stretches"]
            if cycles is not None:
                for _ in range(cycles):
                    after = cycle()
                return before, after
            return before, _wait(lambda: (lambda c: c if c["graphed"] > before["graphed"]
                                          else None)(cycle()),
                                 "a replay through graphs beside a light user")
        finally:
            if b is not None:
                b.close()
            a.close()


def test_a_served_pool_runs_replays_whole_beside_a_light_user():
    before, after = _replays_beside_a_light_user(True, None)
    assert after["graphed"] > before["graphed"]


def test_a_served_pool_without_the_setting_paces_every_replay_beside_a_light_user():
    before, after = _replays_beside_a_light_user(False, 12)
    assert after["paced"] > before["paced"]
    assert after["graphed"] == before["graphed"]
