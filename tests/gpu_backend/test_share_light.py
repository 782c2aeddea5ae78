"""``share``'s light users (the pool's ``share_light_gap_ms``, arbiter/share.py ``_light``):
a user away most of the time (an interactive user, back every few milliseconds with a few
small ops) holds nobody back for the first LIGHT_BURST of each batch, so a saturating user
beside it is not stopped and re-admitted at each of its requests; past LIGHT_BURST, and for
users whose gaps are short (loops that sync), the hold-back is as ever. The policy on the
tests' own clock, the arbiter's deadline, and the setting from the command line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpu_backend.arbiter.choose import make_policy
from gpu_backend.arbiter.policy import Yield
from gpu_backend.arbiter.share import LIGHT_BATCH, LIGHT_BURST, SharePolicy
from gpu_backend.cli import SERVE_SETTINGS, build_parser
from gpu_backend.config import PoolSettings
from gpu_backend.pool import LocalPool

LIGHT_GAP = 0.004


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _yields(actions: list) -> list[str]:
    return [a.session for a in actions if isinstance(a, Yield)]


def _heavy_and_back(light_gap: float, gap: float) -> tuple[SharePolicy, Clock, list]:
    """Users ``a`` (saturating: always with work, charged as it runs) and ``i`` (one short
    batch, then away *gap* seconds, then back): the actions at i's return."""
    clock = Clock()
    policy = SharePolicy(clock, light_gap=light_gap)
    policy.attach("a", "a", 1.0)
    policy.attach("i", "i", 1.0)
    policy.want("a")
    clock.now = 0.020
    policy.used("a", 0.020)
    policy.want("i")                     # its first batch (no gap known yet)
    clock.now = 0.0205
    policy.used("a", 0.0205)
    policy.idle("i", 0.0002)             # its read began, nothing launched left: away
    if "a" in policy.yielding:           # (a was told to stop for i's first batch: it
        policy.release("a", 0.0206, want=True)   # hands its grant back, is let go again)
    for back in range(2):                # two returns after *gap*: its gap's average is *gap*
        clock.now += gap
        policy.used("a", clock.now)
        actions = policy.want("i")
        clock.now += 0.0003
        policy.used("a", clock.now)
        policy.idle("i", policy.sessions["i"].charged + 0.0001)
        if "a" in policy.yielding:
            policy.release("a", clock.now, want=True)
    clock.now += gap
    policy.used("a", clock.now)
    return policy, clock, policy.want("i")


def test_a_light_users_request_holds_the_saturating_user_back_no_more():
    policy, _clock, actions = _heavy_and_back(LIGHT_GAP, gap=0.009)
    assert _yields(actions) == [] and "a" not in policy.yielding
    assert policy.admitted.keys() >= {"a", "i"}          # both on the device, side by side
    # (without the rule, the same requests stop the saturating user each time)
    policy, _clock, actions = _heavy_and_back(0.0, gap=0.009)
    assert _yields(actions) == ["a"]


def test_a_light_batch_that_outlasts_the_burst_holds_the_others_back_as_any_does():
    policy, clock, actions = _heavy_and_back(LIGHT_GAP, gap=0.009)
    assert _yields(actions) == []
    deadline = policy.next_deadline()    # (the arbiter wakes for it: service.py's tick)
    assert deadline == pytest.approx(clock.now + LIGHT_BURST)
    clock.now = deadline - 1e-6
    assert _yields(policy.tick()) == []
    clock.now = deadline
    assert _yields(policy.tick()) == ["a"]   # i still has work 2 ms on: a is held back


def test_users_whose_gaps_are_short_are_never_light():
    """A loop that syncs is away for its round trip: the saturating user is held back for it
    as ever (here it is not even let go again between its batches: it is anticipated)."""
    for light_gap in (LIGHT_GAP, 0.0):
        policy, _clock, actions = _heavy_and_back(light_gap, gap=0.0008)
        assert not policy._light("i")
        assert "a" not in policy.admitted or "a" in policy.yielding


def test_a_users_first_batch_is_not_light():
    clock = Clock()
    policy = SharePolicy(clock, light_gap=LIGHT_GAP)
    policy.attach("a", "a", 1.0)
    policy.attach("i", "i", 1.0)
    policy.want("a")
    clock.now = 0.020
    policy.used("a", 0.020)
    policy.want("i")
    assert not policy._light("i")               # (no gap known: counted as any user)
    assert "i" in [u.name for u in policy._counted()]


def test_the_pool_makes_users_light_unless_told_not_to():
    assert make_policy("share").light_gap == 0.0
    assert make_policy("share", light_gap=LIGHT_GAP).light_gap == LIGHT_GAP
    args = build_parser().parse_args(["serve", "--share-light-gap-ms", "4"])
    assert "share_light_gap_ms" in SERVE_SETTINGS and args.share_light_gap_ms == 4.0
    assert PoolSettings(share_light_gap_ms=args.share_light_gap_ms).share_light_gap_ms == 4.0
    assert PoolSettings().share_light_gap_ms == 4.0                  # (the pool's default)
    assert build_parser().parse_args(["serve", "--share-light-gap-ms", "0"]).share_light_gap_ms == 0.0
    with pytest.raises(ValidationError):
        PoolSettings(share_light_gap_ms=-1)


def test_users_whose_batches_are_long_are_never_light():
    """Long gaps alone do not make a user light: one whose batches run past LIGHT_BATCH
    (a loop that syncs after milliseconds of work) is held back for as ever."""
    clock = Clock()
    policy = SharePolicy(clock, light_gap=LIGHT_GAP)
    policy.attach("a", "a", 1.0)
    policy.attach("s", "s", 1.0)
    policy.want("a")
    for _ in range(3):                   # batches of 8 ms, gaps of 9 ms
        clock.now += 0.009
        policy.used("a", clock.now)
        policy.want("s")
        clock.now += 0.008
        policy.used("a", clock.now)
        policy.idle("s", policy.sessions["s"].charged + 0.004)
        if "a" in policy.yielding:
            policy.release("a", clock.now, want=True)
    clock.now += 0.009
    policy.want("s")
    assert policy.anticipation.gap("s") >= LIGHT_GAP and policy.anticipation.batch("s") > LIGHT_BATCH
    assert not policy._light("s") and "s" in [u.name for u in policy._counted()]


def test_an_embedded_pools_arbiter_takes_the_setting():
    """The pool's setting reaches the policy its arbiter decides with (hosts/worker_host.py
    makes the arbiter): 4 ms by default, 0 where the pool is told so."""
    for told, expected in (({}, 0.004), ({"share_light_gap_ms": 0}, 0.0)):
        with LocalPool(devices="cpu", policy="share", spare_workers=0, **told) as pool:
            arbiter = pool.door.hosts.arbiter_of("cpu:0")
            assert arbiter is not None
            assert arbiter.policies["cpu:0"].light_gap == pytest.approx(expected)
