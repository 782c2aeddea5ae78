"""The ``share`` policy (gpu_backend/arbiter/share.py): sessions run side by side, only a
user ahead of its share is held back, and only while someone behind it has work (or is
anticipated back within a round trip). Its decisions with the tests' own clock, then on a
device shared side by side in virtual time (tests/share_sim.py): device time split by
weight among users with work, saturating and syncing alike, the device busy whenever
anyone has work but while an anticipated user is away."""

from __future__ import annotations

import pytest

from gpu_backend.arbiter.choose import make_policy
from gpu_backend.arbiter.policy import Grant, Yield
from gpu_backend.arbiter.share import TAIL_CAP, TAIL_EARLY, WINDOW, SharePolicy
from tests.share_sim import ShareDevice, ShareSession


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _policy(fill: bool = False, **users) -> tuple[SharePolicy, Clock]:
    clock = Clock()
    policy = SharePolicy(clock, fill=fill)
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


def test_the_part_of_a_report_charged_at_replays_own_costs_is_not_scaled():
    """A worker that prices its replays (worker/replay_prices.py) says how much of its
    ``busy`` they were (``own``): beside another session that part is charged whole (it is
    what the replays cost alone), the rest is scaled by the mean of 1/k as ever. A report
    whose ``own`` goes back, or is not a number, changes nothing of it."""
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now += 0.010
    policy.own_seconds("a", 0.006)
    policy.used("a", 0.010)                       # 6 ms own, 4 ms of spans: 6 + 4 / 2
    policy.used("b", 0.010)
    assert policy.users["a"].vt == pytest.approx(0.008)
    assert policy.users["b"].vt == pytest.approx(0.005)
    for bad in (0.001, float("nan"), "0.02", None, -1.0):
        policy.own_seconds("a", bad)
        assert policy.sessions["a"].own == 0.006
    clock.now += 0.010
    policy.own_seconds("a", 0.009)
    policy.used("a", 0.012)                        # 3 ms more own, no more spans
    assert policy.users["a"].vt == pytest.approx(0.008 + 0.002)   # (own capped at the delta)
    clock.now += 0.010
    policy.used("a", 0.014)                        # the 1 ms of own left over, charged now
    assert policy.users["a"].vt == pytest.approx(0.010 + 0.001 + 0.001 * 0.5)


def test_a_device_that_measures_each_sessions_own_time_is_charged_as_it_reports():
    """The NumPy device's reports are its workers' CPU time, each session's own (with the
    pool's turns, its ops take turns with the others'): scaled by 1/k as well, users 1:2:4
    of a CI run were charged 2.8 s of 4.9 s the device ran."""
    clock = Clock()
    policy = make_policy("share", clock, own_time=True)
    for user in ("a", "b"):
        policy.attach(user, user, 1.0)
    policy.want("a")
    policy.want("b")
    clock.now += 0.010
    policy.used("a", 0.004)
    policy.used("b", 0.006)
    assert policy.users["a"].vt == pytest.approx(0.004)
    assert policy.users["b"].vt == pytest.approx(0.006)


def test_a_user_back_is_forgiven_what_it_would_have_had_beside_those_with_work():
    """Away 50 ms while only a weight-4 user ran, a weight-1 user would have had 1/5 of the
    device: 10 ms, of which ``credit`` is kept (it comes back that far behind, which the
    weight-4 user's 12.5 ms of virtual time meanwhile leaves within ``bank``). Forgiven by the
    clock of the users with work (50 ms / 4), a user away was forgiven more than it would ever
    have had whenever fewer users had work meanwhile: users 1:2:4 whose round trips took 3 ms
    got 0.17 / 0.33 / 0.50 in the simulation (the weight-4 user, away while a weight-1 user
    ran alone, was forgiven five times its part)."""
    policy, clock = _policy(b=4, c=1)
    policy.want("b")
    policy.want("c")
    policy.idle("c", 0.0)
    clock.now += 0.050
    policy.used("b", 0.050)
    before = policy.users["c"].vt
    policy.want("c", holding=True)
    assert policy.users["c"].vt - before == pytest.approx(0.050 / 5 - policy.credit)


def test_a_heavy_user_back_from_its_read_keeps_its_deficit_behind_a_light_user_ahead():
    """A weight-1 user runs 8 ms of virtual time ahead of a weight-4 one (held back, with
    its launched work still charged) when the weight-4 user reads: back 0.5 ms later, the
    weight-4 user keeps its place. The floor of ``bank`` measured in its own weight raised it
    to 4 ms behind (``bank / 4``), and the weight-4 user of three syncing users 1:2:4 lost
    0.64 s of 5.4 s to it (H100 run 56). A light user back behind a heavy one is bounded in
    its own weight, as before."""
    policy, clock = _policy(a=1, c=4)
    policy.want("a")
    policy.want("c")
    clock.now += 0.016
    policy.used("a", 0.016)                 # a: 8 ms charged beside c
    policy.idle("c", 0.0)                   # c reads (it had launched nothing measured yet)
    before = policy.users["c"].vt
    assert policy.users["a"].vt - before == pytest.approx(0.008)
    clock.now += 0.0005
    policy.want("c", holding=True)
    assert policy.users["c"].vt == pytest.approx(before)
    # the other way round: a light user that banked far behind a heavy one comes back at
    # most bank behind it in its own weight
    policy, clock = _policy(a=1, c=4)
    policy.want("a")
    policy.want("c")
    policy.idle("a", 0.0)
    clock.now += 0.400
    policy.used("c", 0.400)                 # c alone: 100 ms of virtual time
    policy.want("a", holding=True)
    assert policy.users["a"].vt == pytest.approx(policy.users["c"].vt - policy.bank)


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
    GEMMs and a read). Each gets its weight's part. The device idles only while a user
    behind is away for its round trip and the users ahead are held back for it
    (anticipated: let go, they would launch a lead of work no yield takes back): at most
    the round trip's part of a batch, 0.3 / 2.3 here (under ``fair`` the hand-overs at each
    read left it idle longer)."""
    sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=0.002, think=0.0003)
                for i, w in enumerate(weights)]
    device = ShareDevice(SharePolicy(), sessions)
    device.run(3.0)
    shares = _shares(device)
    for i, w in enumerate(weights):
        assert shares[f"u{i}"] == pytest.approx(w / sum(weights), abs=0.02), shares
    assert device.conservation >= 1 - 0.0003 / 0.0023


@pytest.mark.parametrize("seed", [1, 2])
def test_syncing_users_whose_reads_begin_before_their_work_ends_split_by_weight(seed):
    """As the real workers do: each says ``idle`` as its batch's read begins, with up to
    4 ms (wall) of launched work still to run, and ``done`` when the read returns; a user
    told to stop gives its grant back at once, with its launched work (4 ms of wall time)
    still to run. 8 ms batches, users 1:2:4, round trips of 0.15–0.45 ms. Counted off the
    device at ``idle``, the users got 0.20 / 0.40 / 0.40; with a release's launched work
    charged whole (as ``fair`` charges it), 0.13 / 0.25 / 0.62."""
    weights = (1, 2, 4)
    sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=0.008, think=0.0003)
                for i, w in enumerate(weights)]
    device = ShareDevice(SharePolicy(), sessions, tail=0.004, lead=0.004, lead_wall=True,
                         jitter=0.5, seed=seed)
    device.run(3.0)
    shares = _shares(device)
    for i, w in enumerate(weights):
        assert shares[f"u{i}"] == pytest.approx(w / sum(weights), abs=0.01), shares
    assert device.conservation >= 0.99


@pytest.mark.parametrize("seed", [1, 2])
def test_syncing_users_whose_round_trips_are_long_split_by_weight_while_they_have_work(seed):
    """Round trips of 3 ms (a loaded host's clients: too long to wait for) after 8 ms
    batches, users 1:2:4: each user away is forgiven only what it would have had beside the
    users with work meanwhile, and the split stays 1:2:4 (forgiven by the clock of those with
    work, the weight-4 user lost its part at every read: 0.17 / 0.33 / 0.50)."""
    weights = (1, 2, 4)
    sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=0.008, think=0.003)
                for i, w in enumerate(weights)]
    device = ShareDevice(SharePolicy(), sessions, tail=0.004, lead=0.001, lead_wall=True,
                         jitter=0.3, seed=seed)
    device.run(3.0)
    shares = _shares(device)
    for i, w in enumerate(weights):
        assert shares[f"u{i}"] == pytest.approx(w / sum(weights), abs=0.015), shares
    assert device.conservation >= 0.99


def test_syncing_users_split_by_weight_when_the_arbiters_word_comes_late():
    """Every grant and yield reaches its worker 0.2 ms after the arbiter decides (a GPU
    host's message and wake-up take about half that): users 1:2:4 of 8 ms batches still
    split the device by weight, and it is busy whenever anyone has work but for the
    messages' latency."""
    weights = (1, 2, 4)
    sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=0.008, think=0.0004)
                for i, w in enumerate(weights)]
    device = ShareDevice(SharePolicy(), sessions, tail=0.004, lead=0.004, lead_wall=True,
                         jitter=0.5, seed=1, delay=0.0002)
    device.run(3.0)
    shares = _shares(device)
    for i, w in enumerate(weights):
        assert shares[f"u{i}"] == pytest.approx(w / sum(weights), abs=0.01), shares
    assert device.conservation >= 0.99


def test_a_user_behind_away_for_its_round_trips_is_anticipated():
    """Users 1:2 with 2 ms batches and a 4 ms (wall) lead: let go at each of the weight-2
    user's reads, the weight-1 user launched a batch the yield could not take back, and
    they split the device 1:1; anticipated, 1:2."""
    sessions = [ShareSession("s0", "u0", 1, batch=0.002, think=0.0003),
                ShareSession("s1", "u1", 2, batch=0.002, think=0.0003)]
    device = ShareDevice(SharePolicy(), sessions, lead=0.004, lead_wall=True, jitter=0.5, seed=1)
    device.run(3.0)
    shares = _shares(device)
    assert shares["u0"] == pytest.approx(1 / 3, abs=0.01), shares
    assert device.conservation >= 1 - 0.00045 / 0.0023


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


# ---------------------------------------------------------------- a read's tail, anticipation

def test_an_idle_session_with_launched_work_shares_the_device_until_done():
    """b says idle at its read with 4 ms of work still running beside a: both are charged
    half of those 4 ms (at ``idle`` counted off the device, b was charged its tail whole
    and a as if alone)."""
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now = 0.010
    policy.idle("b", 0.010, ahead=0.004)
    clock.now = 0.014
    policy.done("b", 0.014)
    policy.used("a", 0.014)
    assert policy.users["a"].vt == pytest.approx(0.007)
    assert policy.users["b"].vt == pytest.approx(0.007)


def test_a_session_released_with_launched_work_shares_the_device_and_is_charged_its_part():
    """a, told to stop, gives its grant back with 4 ms (wall) of work still to run beside
    b: it is charged its half of that at once (not let go again before it counts), and b
    is charged half of those 4 ms too."""
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now = 0.020
    policy.used("a", 0.020)                      # a 10 ms, b none yet: a told to stop
    policy.release("a", 0.020, False, grant=policy.admitted["a"], ahead=0.004)
    assert policy.users["a"].vt == pytest.approx(0.010 + 0.002)
    assert policy.next_deadline() == pytest.approx(0.024)
    clock.now = 0.024
    policy.used("b", 0.024)
    assert policy.users["b"].vt == pytest.approx(0.012)
    clock.now = 0.030
    policy.tick()
    assert "a" not in policy._on and policy.next_deadline() is None


def test_a_release_assumed_above_what_its_work_measured_is_given_back():
    """a releases with 8 ms (wall) of work estimated still to run beside b and is charged
    4 ms at once; its work ran 2 ms (measured at its next report, beside b: 1 ms charged).
    It ends charged what was measured, not what was assumed (a third of the held-back
    users' releases were assumed more than measured among syncing users 1:2:4, H100 run
    56), and a report that measured nothing leaves the assumption to the next."""
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now = 0.020
    policy.used("a", 0.020)                      # a 10 ms, b none yet: a told to stop
    policy.release("a", 0.020, True, grant=policy.admitted["a"], ahead=0.008)
    assert policy.users["a"].vt == pytest.approx(0.010 + 0.004)
    policy.used("a", 0.020)                      # (nothing measured since: still assumed)
    assert policy.users["a"].vt == pytest.approx(0.014)
    clock.now = 0.022
    policy.used("a", 0.022)                      # 2 ms measured beside b: 1 ms its part
    assert policy.users["a"].vt == pytest.approx(0.010 + 0.001)


def _a_held_back_behind_b() -> tuple[SharePolicy, Clock]:
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now = 0.040
    policy.used("a", 0.040)                      # a 20 ms charged, b none: a told to stop
    policy.release("a", 0.040, True, grant=policy.admitted["a"])
    assert "a" not in policy.admitted
    return policy, clock


def test_users_held_back_for_a_reading_session_go_as_its_work_is_estimated_done():
    policy, clock = _a_held_back_behind_b()
    assert not [x for x in policy.idle("b", 0.004, ahead=0.003) if isinstance(x, Grant)]
    assert policy.next_deadline() == pytest.approx(0.040 + 0.003 - TAIL_EARLY)
    clock.now = 0.040 + 0.003 - TAIL_EARLY - 1e-4
    assert policy.tick() == []
    clock.now += 2e-4
    assert policy.tick() == [Grant("a")]


def test_a_tail_whose_done_never_comes_leaves_the_device_after_tail_cap():
    policy, clock = _policy(a=1, b=1)
    policy.want("a")
    policy.want("b")
    clock.now = 0.010
    policy.idle("b", 0.010, ahead=1.0)           # (an estimate past the cap)
    assert policy.next_deadline() == pytest.approx(0.010 + TAIL_CAP - TAIL_EARLY)
    clock.now = 0.010 + TAIL_CAP + 0.010
    policy.tick()
    assert "b" not in policy._on and policy.next_deadline() is None


def _syncs_with_gaps(policy: SharePolicy, clock: Clock, sid: str, gap: float, n: int = 4,
                     batch: float = 0.002) -> float:
    """*sid* (1 ms of work measured a batch, from 1 ms) reads *n* times, away *gap* each,
    its batches *batch* long (wall); returns its measured device time."""
    busy = 0.001
    for _ in range(n):
        busy += 0.001
        policy.idle(sid, busy)
        clock.now += gap
        policy.want(sid, holding=True)
        clock.now += batch
    return busy


def _b_syncing_a_held_back(gap: float, batch: float = 0.002,
                           fill: bool = False) -> tuple[SharePolicy, Clock, float]:
    """b reads four times, away *gap* each (alone: its gaps learnt), then a runs beside it
    far ahead and is told to stop. Returns b's measured device time. *fill*: the policy
    lets users held back into an anticipated user's gap."""
    policy, clock = _policy(fill=fill, a=1, b=1)
    policy.want("b")
    busy = _syncs_with_gaps(policy, clock, "b", gap, batch=batch)
    policy.want("a")
    used = 0.0
    while "a" not in policy.yielding:             # a runs beside b, which reports nothing
        clock.now += 0.001
        used += 0.001
        policy.used("a", used)
        assert used < 0.1
    policy.release("a", used, True, grant=policy.admitted["a"])
    assert "a" not in policy.admitted
    return policy, clock, busy


def test_a_user_back_within_a_round_trip_is_waited_for_and_a_late_one_is_not():
    policy, clock, busy = _b_syncing_a_held_back(0.0003)
    out = clock.now
    assert not [x for x in policy.idle("b", busy) if isinstance(x, Grant)]
    assert policy.next_deadline() == pytest.approx(out + 0.0006)
    clock.now = out + 0.0003                     # b back in time: a stays held back
    policy.want("b", holding=True)
    assert "a" not in policy.admitted
    clock.now += 0.001
    out = clock.now
    policy.idle("b", busy + 0.001)               # b does not come back this time
    clock.now = out + 0.0007
    assert policy.tick() == [Grant("a")]


def _users_work(sessions: list, seconds: float) -> float:
    """The users' side: the sum of each closed loop's rate over its rate alone."""
    return sum(s.got / s.batch / seconds * (s.batch + s.think) for s in sessions)


def test_users_held_back_fill_the_gaps_of_those_anticipated_and_keep_the_weights():
    """Users 1:2:4 of 2 ms batches and 0.4 ms round trips, anticipated back: without
    ``fill`` the device waits through each gap (the users' work 1.137 of what they would do
    alone, ``none`` 1.198); with it the users held back run what the gaps hold (1.189), and
    the weights stay 1:2:4."""
    def run(policy: SharePolicy) -> tuple[float, dict]:
        sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=0.002, think=0.0004)
                    for i, w in enumerate((1, 2, 4))]
        device = ShareDevice(policy, sessions, tail=0.004, lead=0.004, lead_wall=True,
                             jitter=0.5, seed=1)
        device.run(3.0)
        return _users_work(sessions, 3.0), _shares(device)
    waiting, _ = run(SharePolicy())
    filled, shares = run(SharePolicy(fill=True))
    alone, _ = run(SharePolicy(window=100.0))   # (nobody ever held back: as `none`)
    assert filled > waiting + 0.03 and filled > alone - 0.02, (waiting, filled, alone)
    for i, w in enumerate((1, 2, 4)):
        assert shares[f"u{i}"] == pytest.approx(w / 7, abs=0.01), shares


def test_a_fill_decided_as_the_tails_end_comes_in_time_when_the_word_is_late():
    """The same users with every grant and yield 0.1 ms late: decided as the reads' tails on
    the device are estimated to end, the fill's grant arrives before the gap (decided at the
    gap, it gained nothing with 0.2 ms late); waiting, the late grants also cost the
    weights (0.165 / 0.316 / 0.519)."""
    def run(fill: bool) -> tuple[float, dict]:
        sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=0.002, think=0.0004)
                    for i, w in enumerate((1, 2, 4))]
        device = ShareDevice(SharePolicy(fill=fill), sessions, tail=0.004, lead=0.004,
                             lead_wall=True, jitter=0.5, seed=1, delay=0.0001)
        device.run(3.0)
        return _users_work(sessions, 3.0), _shares(device)
    waiting, _ = run(False)
    filled, shares = run(True)
    assert filled > waiting + 0.02, (waiting, filled)
    for i, w in enumerate((1, 2, 4)):
        assert shares[f"u{i}"] == pytest.approx(w / 7, abs=0.01), shares


def test_a_user_held_back_is_let_into_the_expected_gap_of_one_anticipated():
    """b, behind, reads and is anticipated back in 0.3 ms: a, held back for it, runs what
    that gap holds (a standing grant with a 0.3 ms quantum) instead of the device idling,
    and is held back again once it hands the grant back; b back finds the device free."""
    policy, clock, busy = _b_syncing_a_held_back(0.0003, fill=True)
    out = clock.now
    grants = [x for x in policy.idle("b", busy) if isinstance(x, Grant)]
    assert grants == [Grant("a", quantum=pytest.approx(0.0003))] and grants[0].standing
    assert policy.filling["a"][0] == pytest.approx(0.0003)
    used_a = policy.sessions["a"].charged
    clock.now = out + 0.0003
    policy.release("a", used_a + 0.0003, True, grant=policy.admitted["a"])   # its quantum spent
    assert "a" not in policy.admitted and not policy.filling
    assert policy.users["a"].vt > 0                  # charged what it ran
    actions = policy.want("b", holding=True)         # b back: nobody to stop
    assert not [x for x in actions if isinstance(x, (Grant, Yield))]


@pytest.mark.parametrize("op, let_in", [(0.020, False), (0.0041, False), (0.002, True),
                                         (0.0001, True)])
def test_only_a_user_whose_ops_fit_the_gap_or_the_window_is_let_into_it(op, let_in):
    """A user whose ops run 20 ms (its worker's per-op estimate) is not let into b's 0.3 ms
    gap: its first op would run whatever its quantum, and b back would wait for all of it
    (the small syncing user beside a long one, H100 run 33: 0.31 of its rate alone without
    the fill, 0.23 with it). Ops up to the window (4 ms: what any user may run ahead of
    another) are: 2 ms GEMMs fill the gaps of users of 2 ms GEMMs."""
    policy, clock, busy = _b_syncing_a_held_back(0.0003, fill=True)
    policy.op_seconds("a", op)
    grants = [x for x in policy.idle("b", busy) if isinstance(x, Grant)]
    if let_in:
        assert grants == [Grant("a", quantum=pytest.approx(0.0003))]
    else:
        assert not grants and not policy.filling and "a" not in policy.admitted


def test_a_user_let_into_a_gap_that_runs_past_its_quantum_is_told_to_stop():
    """A worker that did not hand its fill back (its reports run on past the quantum by more
    than the window) is told to stop, as a user ahead is: it is held back after."""
    policy, clock, busy = _b_syncing_a_held_back(0.0003, fill=True)
    policy.idle("b", busy)
    start = policy.sessions["a"].charged
    clock.now += 0.002
    assert not [x for x in policy.used("a", start + 0.002) if isinstance(x, Yield)]
    clock.now += 0.008
    actions = policy.used("a", start + 0.010)
    assert Yield("a", grant=policy.admitted["a"]) in actions and not policy.filling


def test_a_user_let_into_a_gap_that_runs_out_of_work_gives_its_grant_back():
    policy, clock, busy = _b_syncing_a_held_back(0.0003, fill=True)
    policy.idle("b", busy)
    assert "a" in policy.filling
    clock.now += 0.0001
    actions = policy.idle("a", policy.sessions["a"].charged + 0.0001)
    assert Yield("a", grant=policy.admitted["a"]) in actions and not policy.filling


def test_a_user_whose_gaps_are_long_is_not_waited_for():
    """A person at a notebook, back every 10 ms: a user held back for it goes at once."""
    policy, clock, busy = _b_syncing_a_held_back(0.010)
    actions = policy.idle("b", busy)
    assert [x for x in actions if isinstance(x, Grant)] == [Grant("a")]


def test_a_user_whose_batches_are_long_is_not_waited_for():
    """Back within a round trip, but its batches 20 ms long: the lead a user held back for
    it would launch into its gap is a small part of a batch, and the device would idle for
    it at every read."""
    policy, clock, busy = _b_syncing_a_held_back(0.0003, batch=0.020)
    actions = policy.idle("b", busy + 0.001)
    assert [x for x in actions if isinstance(x, Grant)] == [Grant("a")]


def test_a_lone_session_is_assumed_its_part_of_the_device_not_the_wall_time():
    """a and b shared the device 10 ms, then a ran alone 2 ms; a newcomer's ``want``
    charges a what it has not reported: 5 + 2 ms, not the 12 ms of wall time."""
    policy, clock = _policy(a=1, b=1, c=1)
    policy.want("a")
    policy.want("b")
    clock.now = 0.010
    policy.idle("b", 0.010)
    clock.now = 0.012
    policy.want("c")
    assert policy.users["a"].vt == pytest.approx(0.007)


def test_only_the_heaviest_users_sessions_get_the_deep_lead():
    """``deep_lead`` (the pool's ``share_deep_lead_ms``): the sessions of the users that
    weigh at least as much as every other user attached may launch that much ahead; the
    others keep their workers' own lead. Off (0), nobody gets one."""
    clock = Clock()
    policy = SharePolicy(clock, deep_lead=0.016)
    for user, weight in (("a", 1), ("b", 2), ("c", 4)):
        policy.attach(user, user, weight)
    assert [policy.lead_for(s) for s in "abc"] == [None, None, 0.016]
    policy.attach("c2", "c", 4)                     # a second session of the heaviest user
    assert policy.lead_for("c2") == 0.016
    policy.set_weight("b", 4)                       # a tie: both heaviest
    assert [policy.lead_for(s) for s in "abc"] == [None, 0.016, 0.016]
    policy.detach("c")
    policy.detach("c2")
    policy.set_weight("b", 2)
    assert [policy.lead_for(s) for s in "ab"] == [None, 0.016]
    assert policy.lead_for("nobody") is None
    even, _ = _policy(x=1, y=1)
    assert even.lead_for("x") is None               # (off by default)
    even.deep_lead = 0.016
    assert even.lead_for("x") == even.lead_for("y") == 0.016


@pytest.mark.parametrize("seed", [1, 2])
def test_syncing_users_1_2_4_keep_their_weights_with_the_heaviest_launching_deep(seed):
    """Users 1:2:4 with 8 ms batches that release at once with their launched work still to
    run (the real worker's release), the weight-4 user's lead 16 ms and the others' 4 ms: the
    heavy user's deeper overshoot is a small part of its share, and the split stays within
    2 % of the weights. (Everyone at 16 ms, as a pool-wide lead makes it, the light users
    overshoot by the same device time, a larger part of their shares: H200 run 79 measured
    the syncing users 18-21 % off.)"""
    weights = (1, 2, 4)
    sessions = [ShareSession(f"s{i}", f"u{i}", w, batch=0.008, think=0.0003)
                for i, w in enumerate(weights)]
    device = ShareDevice(SharePolicy(deep_lead=0.016), sessions, tail=0.004, lead=0.004,
                         lead_wall=True, jitter=0.5, seed=seed)
    device.run(3.0)
    shares = _shares(device)
    for i, w in enumerate(weights):
        assert shares[f"u{i}"] == pytest.approx(w / sum(weights), abs=0.02), shares
    assert device.conservation >= 0.99


def test_a_tail_that_outlasts_its_estimate_is_not_charged_again_as_absence():
    """A worker says ``idle`` as its read begins with 4 ms of work estimated to run; the
    work runs 10 ms (the estimate was a quieter device's). Counted out at the estimate, its
    user is away from there for the policy, but its ``done`` shows the work ran on: its
    absence starts then, and a ``want`` 0.3 ms later raises its virtual time by nothing
    (counted from the estimate, the return charged the 6.5 ms between again: H200 run 82,
    a syncing user whose whole batch was launched before its read, 1.06 s of its 3.66 s)."""
    policy, clock = _policy(a=1, c=4)
    policy.want("a")
    policy.want("c")
    clock.now = 0.010
    policy.used("a", 0.005)
    policy.used("c", 0.005)
    policy.idle("c", 0.006, ahead=0.004)
    clock.now = 0.020
    policy.used("a", 0.010)                  # (a works on: the share clock moves)
    assert not policy.sessions["c"].runnable   # (counted out at its estimate)
    policy.done("c", 0.011)
    after_done = policy.users["c"].vt
    clock.now = 0.0203
    policy.want("c", holding=True)
    assert policy.users["c"].vt == pytest.approx(after_done, abs=1e-12)


def _twelve_ms_batches(policy: SharePolicy, clock: Clock) -> None:
    """ann syncs: batches of 12 ms, 0.3 ms round trips (four 4096² GEMMs time-sliced beside
    others on a GPU), beside bob, who always has work."""
    policy.want("b")
    for _ in range(6):
        policy.want("a", holding="a" in policy.admitted)
        clock.now += 0.012
        policy.idle("a", policy.sessions["a"].charged + 0.004)
        clock.now += 0.0003


def test_a_user_is_waited_for_in_its_gaps_up_to_the_pools_batch_bound():
    """The pool's ``share_anticipate_batch_ms`` (8 by default): a user whose batches average
    12 ms is not waited for in its round trips at the default, and is at 32 ms (the users
    ahead of it then stay held while it is away: run 345)."""
    for bound, waited in ((None, False), (0.032, True)):
        clock = Clock()
        options = {} if bound is None else {"anticipate_batch": bound}
        policy = make_policy("share", clock, **options)
        policy.attach("a", "ann", 4.0)
        policy.attach("b", "bob", 1.0)
        _twelve_ms_batches(policy, clock)
        assert policy.anticipation.expected("ann") is waited, bound


def test_the_pools_anticipation_bound_reaches_its_policies():
    from gpu_backend.config import PoolSettings
    assert PoolSettings().policy_options()["anticipate_batch"] == pytest.approx(0.008)
    options = PoolSettings(share_anticipate_batch_ms=32).policy_options()
    policy = make_policy("share", Clock(), **options)
    assert policy.anticipation.longest_batch == pytest.approx(0.032)
