"""``share``'s round trips charged (arbiter/share.py, ``gap_charge``): a user back from a short
gap between its batches is charged the gap as its own time, so that weights hold as the users
see them — each user's progress over its progress alone, where a loop's round trips leave the
device idle. With the tests' own clock, then on the simulated shared device
(tests/share_sim.py), where users whose loops differ only in their round trips split their
progress by weight with it and not without it."""

from __future__ import annotations

import pytest

from gpu_backend.arbiter.choose import make_policy
from gpu_backend.arbiter.share import SharePolicy
from gpu_backend.config import PoolSettings
from tests.share_sim import ShareDevice, ShareSession


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _two_users(gap_charge: float) -> tuple[SharePolicy, Clock]:
    clock = Clock()
    policy = SharePolicy(clock, gap_charge=gap_charge)
    policy.attach("a", "a", 1)
    policy.attach("b", "b", 2)
    policy.want("a")
    policy.want("b")
    return policy, clock


def _round_trip(policy: SharePolicy, clock: Clock, gap: float) -> float:
    """User b runs 1 ms, says idle with nothing launched, and is back *gap* later: how much
    its virtual time moved over the gap."""
    clock.now += 0.001
    policy.used("a", clock.now)
    policy.idle("b", busy=clock.now)
    before = policy.users["b"].vt
    clock.now += gap
    policy.want("b", holding=True)
    return policy.users["b"].vt - before


def test_a_round_trip_is_charged_to_its_user_in_its_weight():
    policy, clock = _two_users(gap_charge=0.002)
    plain, plain_clock = _two_users(gap_charge=0.0)
    moved = _round_trip(policy, clock, 0.0008) - _round_trip(plain, plain_clock, 0.0008)
    assert moved == pytest.approx(0.0008 / 2)
    assert policy.gaps_charged == pytest.approx(0.0008)
    assert policy.snapshot()["gaps_charged"] == pytest.approx(0.0008)


@pytest.mark.parametrize("gap_charge, gap", [(0.002, 0.010), (0.0, 0.0008)])
def test_a_pause_longer_than_a_round_trip_or_the_rule_off_is_not_charged(gap_charge, gap):
    """A pause of 10 ms (an interactive user between requests, a person thinking) is not a
    loop's round trip; with the rule off (a policy made alone) no gap is: the user's virtual time
    moves over the gap as the return's own rule moves it, nothing more."""
    policy, clock = _two_users(gap_charge=gap_charge)
    plain, plain_clock = _two_users(gap_charge=0.0)
    assert _round_trip(policy, clock, gap) == pytest.approx(_round_trip(plain, plain_clock, gap))
    assert policy.gaps_charged == 0.0


def test_the_pool_settings_reach_the_policy():
    settings = PoolSettings(share_gap_charge_ms=1.5, share_forget_idle_ms=20)
    policy = make_policy("share", gap_charge=settings.share_gap_charge_ms / 1e3,
                         forget_idle=settings.share_forget_idle_ms / 1e3)
    assert policy.gap_charge == pytest.approx(0.0015)
    assert policy.forget_idle == pytest.approx(0.020)
    assert PoolSettings().share_gap_charge_ms == 1.0   # (the pool's default; a policy made alone has none)
    assert PoolSettings().share_forget_idle_ms == 50.0
    assert make_policy("share").forget_idle == pytest.approx(0.050)


def test_a_gap_after_a_release_counts_from_its_launched_work_s_end():
    """User b gives its grant back with nothing more to run and 0.6 ms of work launched (told
    to stop as its batch ends); that work runs out, and b is back 0.3 ms later: its round trip
    is the 0.3 ms, not the 0.9 ms since its release (the launched work is charged by its
    report)."""
    policy, clock = _two_users(gap_charge=0.002)
    clock.now += 0.001
    policy.release("b", busy=clock.now, want=False, ahead=0.0006)
    clock.now += 0.0009
    charged = policy.gaps_charged
    policy.want("b")
    assert policy.gaps_charged - charged == pytest.approx(0.0003, abs=1e-9)


def _users_side(specs, gap_charge: float, **device) -> tuple[list[float], float]:
    """Closed loops (weight, device seconds a batch, round trip; None: saturating) on the
    simulated device for 3 s: each user's progress over its progress alone (a batch then its
    round trip, the device idle meanwhile; a saturating user's, the device's whole time), and
    the device's work conservation."""
    sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=b, think=t)
                for i, (w, b, t) in enumerate(specs)]
    sim = ShareDevice(SharePolicy(gap_charge=gap_charge, deep_lead=0.016), sessions,
                      jitter=0.3, seed=0, **device)
    sim.run(3.0)
    rates = [s.got / 3.0 if s.think is None else s.got / s.batch * (s.batch + s.think) / 3.0
             for s in sessions]
    return rates, sim.conservation


def _shares(rates: list[float]) -> list[float]:
    return [r / sum(rates) for r in rates]


def test_loops_that_differ_in_their_round_trips_split_their_progress_evenly():
    """Two users 1:1 with 2 ms batches, one's round trip 0.6 ms and the other's 0.1 ms: by
    device time alone the first gets 0.55 of the progress as they see it (its own round trips
    cost it a quarter of its rate alone, where the other's fill them); charged its round
    trips, each gets half, and the device is as busy."""
    specs = [(1, 0.002, 0.0006), (1, 0.002, 0.0001)]
    without, busy_without = _users_side(specs, gap_charge=0.0)
    assert _shares(without)[0] > 0.54   # (the miss the rule mends, as the simulation has it)
    rates, busy = _users_side(specs, gap_charge=0.002)
    assert _shares(rates) == pytest.approx([0.5, 0.5], abs=0.01)
    assert busy >= busy_without - 0.01


def test_mixed_kinds_at_weights_1_2_4_keep_their_weights_as_the_users_see_them():
    """A saturating user at weight 1, a loop with 0.8 ms round trips at 2 and one with 0.3 ms
    at 4 (the shapes of fairness.py's mixed-1:2:4): within 1.5 % of the weights each."""
    rates, _ = _users_side([(1, 0.004, None), (2, 0.004, 0.0008), (4, 0.008, 0.0003)],
                           gap_charge=0.002)
    for share, weight in zip(_shares(rates), (1, 2, 4)):
        assert share == pytest.approx(weight / 7, rel=0.015)


def test_equal_loops_split_as_before():
    """Users whose round trips are alike are charged alike: their split does not move."""
    specs = [(1, 0.008, 0.0003), (2, 0.008, 0.0003), (4, 0.008, 0.0003)]
    before, _ = _users_side(specs, gap_charge=0.0)
    after, _ = _users_side(specs, gap_charge=0.002)
    assert _shares(after) == pytest.approx(_shares(before), abs=0.01)


class _WarmingUp(ShareSession):
    """A closed loop that finishes the batch it began when its warm-up ends (its ``stop``),
    as a client does before it waits for the common start; then idle until ``start``.
    (ShareSession's own loop drops its batch at ``stop``, its worker never saying ``idle``.)"""

    def has_work(self, now: float) -> bool:
        return self.start <= now and self.left > 0


def _apart(forget_idle: float, idle: float) -> tuple[float, float, SharePolicy]:
    """User a runs 30 ms alone (b attached, idle), both go idle for *idle* seconds, then b
    comes back, then a: their virtual times, and the policy."""
    clock = Clock()
    policy = SharePolicy(clock, forget_idle=forget_idle)
    policy.attach("a", "a", 1)
    policy.attach("b", "b", 1)
    policy.want("a")
    clock.now = 0.030
    policy.idle("a", busy=0.030)
    clock.now += idle
    policy.want("b")
    policy.want("a", holding=True)
    return policy.users["a"].vt, policy.users["b"].vt, policy


def test_a_device_left_idle_starts_every_user_level():
    """a used 30 ms while b had nothing to run; the device then went unused for 60 ms: b's
    return starts both level (the place a earned before is no claim after), where a pause
    shorter than ``forget_idle`` keeps a ahead by what it used, less b's credit. The
    snapshot counts the forgettings (``forgotten``)."""
    a, b, policy = _apart(forget_idle=0.05, idle=0.060)
    assert a == pytest.approx(b)
    assert policy.forgotten == 1 and policy.snapshot()["forgotten"] == 1
    a, b, policy = _apart(forget_idle=0.05, idle=0.010)
    assert a - b > 0.010
    assert policy.snapshot()["forgotten"] == 0
    a, b, policy = _apart(forget_idle=0.0, idle=0.060)   # (never: the rule off)
    assert a - b > 0.010
    assert policy.forgotten == 0 and "forgotten" not in policy.snapshot()


def _warm_then_start(seed: int, forget_idle: float) -> list[float]:
    """Six users 1:1 each warm up alone for a few 8 ms batches at a random moment within
    0.8 s, then all start their loops at 1.5 s (fairness.py's scenarios): each user's part
    of the device over the first 300 ms."""
    import random

    rnd = random.Random(seed)
    sessions = []
    for i in range(6):
        start = rnd.uniform(0, 0.8)
        sessions.append(_WarmingUp(f"s{i}", f"u{i}", 1, batch=0.008, think=0.0003,
                                   start=start, stop=start + 0.06))
    sim = ShareDevice(SharePolicy(deep_lead=0.016, forget_idle=forget_idle), sessions,
                      tail=0.004, lead=0.004, lead_wall=True, jitter=0.5, seed=seed)
    sim.run(1.5)
    for s in sessions:
        s.start, s.stop = 1.5, float("inf")
    before = {s.sid: s.got for s in sessions}
    sim.run(0.3)
    got = [s.got - before[s.sid] for s in sessions]
    return [g / sum(got) for g in got]


@pytest.mark.parametrize("seed", range(10))
def test_users_that_warm_up_one_after_another_start_level_after_the_device_idled(seed):
    """The device idled before the common start, so every user starts level, and each gets
    its sixth within 0.01 from the start."""
    for part in _warm_then_start(seed, forget_idle=0.05):
        assert part == pytest.approx(1 / 6, abs=0.01)


def test_without_forgetting_users_warmed_up_one_after_another_start_uneven():
    """The same draws with the rule off: what each user would have had meanwhile (``left``,
    counted whenever anyone had work) and the places taken beside nobody hold some users back
    at the start (the draws' least parts 0.00-0.06)."""
    least = [min(_warm_then_start(seed, forget_idle=0.0)) for seed in range(10)]
    assert sum(part < 0.10 for part in least) >= 3, least


def _back_after_70_ms(drain: float) -> dict[str, float]:
    """Users a, b, c: a runs 10 ms, then all go idle, c giving its grant back with *drain*
    seconds of work launched (its worker says ``done`` when that has run); 70 ms on, b comes
    back: every user's virtual time then."""
    clock = Clock()
    policy = SharePolicy(clock, forget_idle=0.05)
    for user in "abc":
        policy.attach(user, user, 1)
        policy.want(user)
    clock.now = 0.010
    policy.used("a", 0.010)
    policy.idle("a", busy=0.010)
    policy.idle("b", busy=0.0)
    policy.release("c", busy=0.0, want=False, ahead=drain, done_follows=True)
    clock.now = 0.080
    policy.want("b")
    return {u: policy.users[u].vt for u in "abc"}


def test_a_device_still_draining_forgets_nothing():
    """The forgetting waits for a device nobody uses: with c's released work still on it
    (0.1 s launched), b comes back behind a as it was; with nothing on it, level with it."""
    still = _back_after_70_ms(drain=0.1)
    assert still["b"] < still["a"] - 0.002
    idle = _back_after_70_ms(drain=0.0)
    assert idle["b"] == pytest.approx(idle["a"])
