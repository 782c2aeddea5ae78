"""The fair policy's gap rule (gpu_backend/arbiter/gap_rule.py, issue 38), driven with a fake
clock and by the simulated device of tests/policy_sim.py: a session between two batches is
kept the device while a user of longer ops waits, only where that saves more than it costs,
and no user of a mix of long, short, training and interactive work falls below its fair
share.
"""

import pytest

from gpu_backend.arbiter.turns import FairPolicy

from tests.policy_sim import Fair, SimSession, simulate


def trainer_and_long(gap_rule=True, op=0.022):
    """Users T (a training loop: 3 ms steps, back 0.5 ms after each, as when it reads its
    loss) and L (ops of *op* seconds, waiting), on a fair policy whose clock is ``t[0]``.
    T has held the device for a step and come back once, so its gap is known."""
    t = [0.0]
    policy = Fair(lambda: t[0], gap_rule=gap_rule)
    policy.attach("t", "T")
    policy.attach("l", "L")
    policy.want("t")
    policy.op_seconds("l", op)
    policy.want("l")
    t[0] = 0.003
    assert policy.release("t", 0.003, want=False)[0].session == "l"   # its gap is not known yet
    t[0] = 0.0035
    policy.want("t")                       # back after 0.5 ms, behind L's running op
    t[0] = 0.025
    policy.release("l", 0.022, want=True)  # L hands over after its op
    assert policy.holder == "t" and policy.gaps.sessions["t"].gap == pytest.approx(0.0005)
    return t, policy


def test_the_gap_rule_keeps_the_device_for_a_trainer_between_steps():
    t, policy = trainer_and_long()
    t[0] = 0.028
    assert policy.release("t", 0.006, want=False) == []          # held for T, L waits
    assert policy.gaps.hold[0] == "t" and policy.next_deadline() == pytest.approx(0.028 + 2 * 0.0005 + 0.0002)
    vt = policy.users["T"].vt
    t[0] = 0.0285
    [grant] = policy.want("t")                                    # back within its hold
    assert grant.session == "t" and policy.gaps.hold is None
    assert policy.users["T"].vt == pytest.approx(vt + 0.0005)     # charged the idle gap
    # the hold runs out: the device goes to L at the arbiter's next tick
    t[0] = 0.0315
    assert policy.release("t", 0.009, want=False) == []
    t[0] = policy.next_deadline()
    assert [a.session for a in policy.tick()] == ["l"]
    assert policy.users["T"].vt == pytest.approx(vt + 0.0005 + 0.003 + 0.0012)


def test_while_a_trainer_is_held_a_user_with_credit_goes_first_and_the_hold_goes_on():
    t, policy = trainer_and_long()
    t[0] = 0.028
    assert policy.release("t", 0.0215, want=False) == []   # T just behind L's 22 ms
    policy.attach("i", "I")
    [grant] = policy.want("i")                     # an interactive op: credit against T
    assert grant.session == "i" and policy.gaps.hold[1] is None
    t[0] = 0.0282
    assert policy.release("i", 0.0002, want=False) == []        # the device is T's again
    assert policy.gaps.hold[0] == "t" and policy.gaps.hold[1] == pytest.approx(0.0282)
    t[0] = 0.0284
    assert [a.session for a in policy.want("t")] == ["t"]


@pytest.mark.parametrize("case", ["short ops", "ahead", "long gap", "off", "alone"])
def test_the_gap_rule_holds_only_where_it_saves_more_than_it_costs(case):
    t, policy = trainer_and_long(gap_rule=case != "off", op=0.0003 if case == "short ops" else 0.022)
    if case == "ahead":      # T has had more than L: L's turn
        policy.used("t", 0.1)
    if case == "long gap":   # T came back after 5 ms lately: not a gap between batches
        policy.gaps.sessions["t"].gap = 0.005
    if case == "alone":      # nobody waits: a lone holder keeps the device, no hold needed
        policy.detach("l")
    t[0] = 0.028
    actions = policy.release("t", 0.006 if case != "ahead" else 0.1, want=False)
    assert policy.gaps.hold is None
    assert [a.session for a in actions] == ([] if case == "alone" else ["l"])


def test_a_held_session_that_goes_away_hands_the_device_on():
    t, policy = trainer_and_long()
    t[0] = 0.028
    policy.release("t", 0.006, want=False)
    assert [a.session for a in policy.detach("t")] == ["l"] and policy.gaps.hold is None


def _normalised(dev, s, t0, t1):
    """A session's progress over [t0, t1] against its progress alone: device seconds over
    the window's, or for a closed loop over the share of time it keeps a device busy."""
    alone = (t1 - t0) * (1.0 if s.think is None and s.period is None else s.op / (s.op + (s.think or 0)))
    return dev.busy_between(s.sid, t0, t1) / alone


@pytest.mark.parametrize("long_op", [0.022, 0.00135])   # one kernel, or split into pieces
def test_a_trainer_beside_long_ops_gets_half_with_the_gap_rule(long_op):
    """Issue 38's gap case, simulated: a training loop that reads its loss every step beside
    a user of long ops, 1:1. Each gets half of its rate alone (the trainer's pauses count
    as its own time). Without the rule (the diagnostic), the trainer waits out a long op at
    nearly every step."""
    got = {}
    for rule in (True, False):
        trainer = SimSession("t", "T", op=0.003, think=0.0005)
        long = SimSession("l", "L", op=long_op)
        dev = simulate([(trainer, 1), (long, 1)], 6.0, FairPolicy(gap_rule=rule))
        got[rule] = (_normalised(dev, trainer, 1, 6), _normalised(dev, long, 1, 6))
    assert got[True] == (pytest.approx(0.5, abs=0.05), pytest.approx(0.5, abs=0.05))
    if long_op > 0.01:
        assert got[False][0] < 0.2


MIXES = {   # (sid, op, think, period, weight)
    "long vs small": [("l", 0.022, None, None, 1), ("s", 0.0003, None, None, 1)],
    "long vs trainer": [("l", 0.022, None, None, 1), ("t", 0.003, 0.0005, None, 1)],
    "long, trainer, interactive": [("l", 0.022, None, None, 1), ("t", 0.003, 0.0005, None, 1),
                                   ("i", 0.0001, None, 0.01, 1)],
    "pieces, trainer, small": [("l", 0.00135, None, None, 1), ("t", 0.003, 0.0005, None, 1),
                               ("s", 0.0003, None, None, 1)],
    "weights 1:2:4, long heaviest": [("s", 0.0003, None, None, 1), ("t", 0.003, 0.0005, None, 2),
                                     ("l", 0.022, None, None, 4)],
    "weights 4:2:1, long lightest": [("s", 0.0003, None, None, 4), ("t", 0.003, 0.0005, None, 2),
                                     ("l", 0.022, None, None, 1)],
}


@pytest.mark.parametrize("mix", sorted(MIXES))
def test_no_user_falls_below_its_fair_share_whatever_the_op_lengths(mix):
    """The never-worse-than-none rule, as the policy can promise it: plain time-slicing
    gives no user more than the device, so a user is never worse off under `fair` than its
    fair share (its weight's part of the device, by its rate alone), or all it asks for if
    that is less. Judged over 5 s with 5 % slack; an interactive user's requests wait at
    most for the op on the device and its own."""
    specs = MIXES[mix]
    sessions = [(SimSession(sid, sid.upper(), op, think=think, period=period), w)
                for sid, op, think, period, w in specs]
    dev = simulate(sessions, 6.0)
    weights = sum(w for _s, w in sessions if _s.period is None)
    for s, w in sessions:
        if s.period is not None:   # interactive: a request waits for one op at most
            longest = max(x.op for x, _w in sessions)
            assert max(s.latencies[5:]) <= longest + s.op + 1e-9, mix
            continue
        assert _normalised(dev, s, 1, 6) >= min(1.0, w / weights) - 0.05, (mix, s.sid)


def test_no_hold_while_the_held_users_other_session_waits_and_it_goes_first_during_one():
    t, policy = trainer_and_long()
    policy.attach("t2", "T")
    policy.op_seconds("t2", 0.003)
    policy.want("t2")                               # T's second session waits too
    t[0] = 0.028
    assert [a.session for a in policy.release("t", 0.006, want=False)] == ["t2"]
    assert policy.gaps.hold is None
    t2, other = trainer_and_long()                  # a hold, then T's other session asks
    t2[0] = 0.028
    assert other.release("t", 0.006, want=False) == []
    other.attach("t2", "T")
    assert [a.session for a in other.want("t2")] == ["t2"]
