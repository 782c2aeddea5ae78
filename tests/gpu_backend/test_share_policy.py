"""The ``share`` policy (gpu_backend/arbiter/share.py): sessions run side by side, only a
user ahead of its share is held back, and only while someone behind it has work. Its
decisions with the tests' own clock, then on a device shared side by side in virtual time
(tests/share_sim.py): the device busy whenever anyone has work, and device time split by
weight among users with work, saturating and syncing alike."""

from __future__ import annotations

import pytest

from gpu_backend.arbiter.choose import make_policy
from gpu_backend.arbiter.policy import Grant, Yield
from gpu_backend.arbiter.share import WINDOW, SharePolicy
from tests.share_sim import ShareDevice, ShareSession


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _policy(**users) -> tuple[SharePolicy, Clock]:
    clock = Clock()
    policy = SharePolicy(clock)
    for user, weight in users.items():
        policy.attach(user, user, weight)
    return policy, clock


def test_make_policy_names_share():
    assert isinstance(make_policy("share"), SharePolicy)


def test_a_lone_session_gets_a_standing_grant_and_hears_nothing_more():
    policy, clock = _policy(a=1)
    actions = policy.want("a")
    assert actions == [Grant("a")] and actions[0].standing
    for _ in range(20):
        clock.now += 0.01
        assert policy.used("a", clock.now) == []
        assert policy.idle("a", clock.now) == []
        assert policy.want("a", holding=True) == []


def test_a_second_user_runs_beside_the_first_at_once():
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    clock.now += 0.05
    policy.used("a", 0.05)
    actions = policy.want("b")
    assert actions == [Grant("b")]          # no yield: nobody is drained for it
    assert set(policy.admitted) == {"a", "b"}


def test_reports_beside_others_are_charged_their_part_of_the_device():
    """Two sessions with work for 10 ms: each worker measured 10 ms (time-sliced), each is
    charged 5 (the mean of 1/k over the span)."""
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now += 0.010
    policy.used("a", 0.010)
    policy.used("b", 0.010)
    assert policy.users["a"].vt == pytest.approx(0.005)
    assert policy.users["b"].vt == pytest.approx(0.005)


def test_a_user_ahead_is_held_back_only_while_one_behind_has_work():
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now += 0.004
    policy.used("b", 0.004)   # b: 2 ms charged
    clock.now += 0.012
    actions = policy.used("a", 0.016)   # a: 2 + 6 ms charged, 6 ms ahead of b
    assert Yield("a", grant=policy.admitted["a"]) in actions
    # b runs out of work: a is held back for nobody
    policy.release("a", 0.016, True, grant=policy.admitted["a"])
    actions = policy.idle("b", 0.004)
    assert [a for a in actions if isinstance(a, Grant)] == [Grant("a")]


def test_a_user_held_back_is_let_go_once_back_within_half_the_window():
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now += 0.020
    actions = policy.used("a", 0.020)           # a: 10 ms charged beside b; b: none yet
    assert Yield("a", grant=policy.admitted["a"]) in actions
    policy.release("a", 0.020, True, grant=policy.admitted["a"])
    assert "a" not in policy.admitted
    lags = []
    while "a" not in policy.admitted:           # b alone on the device, reporting each ms
        lags.append(policy.lag("a"))
        clock.now += 0.001
        policy.used("b", clock.now)
        assert clock.now < 1.0
    assert lags[-1] > WINDOW / 2 >= policy.lag("a")


def test_an_idle_holder_ahead_loses_its_standing_grant():
    """A session of a user ahead that went idle would launch before it heard of a yield:
    its standing grant is taken back while it is idle."""
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now += 0.010
    actions = policy.idle("a", 0.010)           # a: 5 ms charged, b: none yet (working)
    assert Yield("a", grant=policy.admitted["a"]) in actions
    clock.now += 0.001
    assert policy.used("b", 0.011) == []        # (told once)


def test_a_release_of_an_older_grant_is_charged_and_otherwise_ignored():
    policy, clock = _policy(a=1)
    policy.want("a")
    grant = policy.admitted["a"]
    clock.now += 0.001
    assert policy.release("a", 0.001, False, grant=grant - 1) == []
    assert policy.admitted == {"a": grant}
    assert policy.users["a"].vt == pytest.approx(0.001)


def test_a_want_without_holding_from_an_admitted_session_gets_its_grant_again():
    """Its grant was lost or crossed a release: a worker waiting for a grant it never read
    would wait for ever."""
    policy, _clock = _policy(a=1)
    policy.want("a")
    grant = policy.admitted["a"]
    assert policy.want("a") == [Grant("a", grant=grant)]


def test_a_session_that_leaves_lets_the_held_back_go():
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now += 0.020
    policy.used("a", 0.020)
    policy.release("a", 0.020, True, grant=policy.admitted["a"])
    actions = policy.detach("b")
    assert actions == [Grant("a")]


def test_a_user_back_from_a_pause_holds_back_nobody_level_with_it():
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now += 0.010
    policy.used("a", 0.010)
    policy.used("b", 0.010)
    policy.idle("b", 0.010)
    clock.now += 0.5                  # b thinks; a alone on the device
    policy.used("a", 0.510)
    actions = policy.want("b", holding=True)
    assert not [x for x in actions if isinstance(x, Yield)]


# ---------------------------------------------------------------- side by side, simulated

def _shares(device: ShareDevice) -> dict[str, float]:
    got: dict[str, float] = {}
    for s in device.sessions.values():
        got[s.user] = got.get(s.user, 0.0) + s.got
    total = sum(got.values())
    return {u: g / total for u, g in got.items()}


@pytest.mark.parametrize("weights", [(1, 1), (1, 2, 4), (1, 3)])
def test_saturating_users_split_the_device_by_weight_and_keep_it_busy(weights):
    sessions = [ShareSession(f"s{i}", f"u{i}", w) for i, w in enumerate(weights)]
    device = ShareDevice(SharePolicy(), sessions)
    device.run(3.0)
    shares = _shares(device)
    for i, w in enumerate(weights):
        assert shares[f"u{i}"] == pytest.approx(w / sum(weights), abs=0.01), shares
    assert device.conservation == 1.0


@pytest.mark.parametrize("weights", [(1, 1), (1, 2, 4)])
def test_syncing_users_split_the_device_by_weight_and_keep_it_busy(weights):
    """Closed loops: 2 ms of work a batch, then 0.3 ms of the client's round trip (four
    GEMMs and a read). Each gets its weight's part, and the device runs whenever anyone
    has work (under ``fair`` the hand-overs at each read left it idle)."""
    sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=0.002, think=0.0003)
                for i, w in enumerate(weights)]
    device = ShareDevice(SharePolicy(), sessions)
    device.run(3.0)
    shares = _shares(device)
    for i, w in enumerate(weights):
        assert shares[f"u{i}"] == pytest.approx(w / sum(weights), abs=0.02), shares
    assert device.conservation >= 0.999


def test_a_syncing_user_beside_a_saturating_one_gets_half_while_it_has_work():
    """A loop that thinks as long as it works beside one that never stops: the saturating
    user has the device alone while the other thinks (nobody is kept the device), and the
    syncing user is not slowed below its share while it has work."""
    sync = ShareSession("s", "sync", batch=0.002, think=0.002)
    hog = ShareSession("h", "hog")
    device = ShareDevice(SharePolicy(), [sync, hog])
    device.run(3.0)
    assert device.conservation == 1.0
    assert sync.got / sync.had_work >= 0.5 - 0.02
    assert hog.got >= 3.0 - sync.got - 1e-6


def test_a_user_that_pauses_often_banks_no_more_than_bank():
    """An interactive user (a 20 µs op every 10 ms) beside a saturating one for 2 s, then
    saturating too: it was behind all along, but comes back at most BANK behind, so the
    other is held back for a few tens of milliseconds, not for the second it would have
    banked at every pause."""
    from gpu_backend.arbiter.share import BANK
    user = ShareSession("i", "interactive", batch=20e-6, think=0.010)
    hog = ShareSession("h", "hog")
    device = ShareDevice(SharePolicy(), [user, hog])
    device.run(2.0)
    assert hog.got >= 2.0 * 0.95
    user.think = None            # from now on saturating
    before = hog.got
    device.run(0.2)
    assert hog.got - before >= (0.2 - 2 * BANK) / 2 - 0.01
