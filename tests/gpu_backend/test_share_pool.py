"""``--policy share`` in a served pool on the NumPy device, its ops taken in turns by its
sessions' workers as one GPU's are (the pool's ``numpy_device_turns``, devices/host_turns.py):
users whose loops sync every few milliseconds, each in its own session, get at least their
weights' part of the device time whenever they have work, by the pool's own accounting (the
charges the arbiter's trace records after each decision), and their workers run side by side
under standing grants (they say ``idle`` at their reads and are never handed a quantum).
Judged from the pool's accounting, so that a loaded machine, which slows a user's client and
so its demand, cannot make it fail: time a user had no work is not counted against it.

Without the turns, each worker computes on host cores of its own: on a 2-core VM the device
was seldom contended, and every user got far more than its weight's part while it had work
(measured 2026-11-26: 0.44-0.74 for each of 1:2:4 and of 1:1:1 alike), so the weights were
never tested. With them, the weight-4 user's part while it has work (0.60-0.62 measured) is
above what any split blind to weights gives it (a third).

What this does not show: the split of the whole run by weight. On this VM the clients'
round trips (2-4 ms, threads of one process) are as long as their batches (four 256²
GEMMs), each user is away a third of the time, and a user away is owed at most ``BANK``:
measured from the usage log, 0.18-0.21 / 0.36-0.38 / 0.41-0.46 against 0.143 / 0.286 /
0.571, where ``none`` gives a third each. The weights' split of a contended device is
tested with the policy's own clock in a simulated device (tests/gpu_backend/
test_share_policy.py, tests/share_sim.py) and measured on GPUs (benchmarks/fairness.py,
docs/fair-share.md)."""

from __future__ import annotations

import json

import pytest

from tests.syncing_users import run_syncing_users



def _trace_shares(trace) -> tuple[dict[str, tuple[float, float]], dict[str, int]]:
    """Per user: (its part of the device time the pool charged while it had work, that
    device time), and the ``idle`` messages each user's workers sent. The charges are the
    users' virtual times after each decision (× weight); each entry's increase (a report of
    the time before its message) counts toward every user that had work before it, but for
    the increase a ``want`` gives its own user: that is the policy moving a user back from
    idle up the clock (SharePolicy._wake), no device time. (Counted as device time, other
    users' returns from pauses that a loaded machine lengthens took the weight-4 user's part
    to 0.38 against its 0.571.)"""
    state: dict[str, str] = {}      # session -> "on" | "waiting" | "idle"
    user_of: dict[str, str] = {}
    weights: dict[str, float] = {}
    last_vt: dict[str, float] = {}
    got: dict[str, float] = {}
    total: dict[str, float] = {}
    idles: dict[str, int] = {}

    def has_work() -> set:
        return {user_of[s] for s, st in state.items() if st != "idle"}

    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        session, user, msg = entry["session"], entry["user"], entry["msg"]
        user_of[session] = user
        for name, info in (entry.get("state") or {}).get("users", {}).items():
            weights[name] = info["weight"]
        before = has_work()
        kind = msg.get("t")
        if kind == "idle":
            state[session] = "idle"
            idles[user] = idles.get(user, 0) + 1
        elif kind == "want":
            state[session] = "on" if msg.get("h") else state.get(session, "waiting")
        elif kind == "release":
            state[session] = "waiting" if msg.get("want") else "idle"
        for action in entry["actions"]:
            if action["a"] == "grant":
                user_of.setdefault(action["session"], user)
                state[action["session"]] = "on"
        vt = entry.get("vt") or {}
        for name, value in vt.items():
            delta = (value - last_vt.get(name, value)) * weights.get(name, 1.0)
            last_vt[name] = value
            if delta <= 0 or (kind == "want" and name == user):
                continue
            for counted in before:
                total[counted] = total.get(counted, 0.0) + delta
                if counted == name:
                    got[name] = got.get(name, 0.0) + delta
    return {u: (got.get(u, 0.0) / total[u], total[u]) for u in total if total[u] > 0}, idles


@pytest.mark.parametrize("weights", [{"a": 1, "b": 1}, {"a": 1, "b": 2, "c": 4}],
                         ids=["1:1", "1:2:4"])
def test_users_that_sync_every_few_ms_share_the_device_by_weight_side_by_side(tmp_path, weights):
    trace = run_syncing_users(tmp_path, weights, "share", turns=True)
    shares, idles = _trace_shares(trace)
    assert set(idles) == set(weights), idles        # every user's worker said idle at its reads
    entries = [json.loads(line) for line in trace.read_text().splitlines()]
    granted = [a for e in entries for a in e["actions"] if a["a"] == "grant"]
    assert granted and all(a["standing"] and a["quantum"] is None for a in granted)
    assert set(shares) == set(weights), shares
    total_w = sum(weights.values())
    for u, w in weights.items():
        share, seconds = shares[u]
        assert seconds > 0.2, shares                # hundreds of batches competed
        assert share >= w / total_w - 0.05, (u, shares)


def test_a_lone_user_that_syncs_sends_the_arbiter_nothing_at_its_reads(tmp_path):
    """Alone on the device nobody is held back for it, so its worker says neither ``idle``
    at its reads nor ``want`` after them (issue 50: a lone session pays for no pacing it
    does not need): the arbiter hears its first ``want`` and its reports of device time."""
    trace = run_syncing_users(tmp_path, {"a": 1}, "share", seconds=1.5)
    said = [json.loads(line)["msg"].get("t") for line in trace.read_text().splitlines()]
    assert said.count("want") <= 1 and "idle" not in said, said
    assert set(said) <= {"want", "used", "release"}, said   # (release: the session closed)


def test_a_served_pool_charges_its_users_round_trips(tmp_path):
    """The pool's ``share_gap_charge_ms`` reaches its arbiter (GPUWB_SHARE_GAP_CHARGE_MS,
    here a second, so that a loaded machine's slow round trips count too): the arbiter's
    snapshot counts about the users' gaps between ``idle`` and ``want`` as charged, and
    their returns raise their virtual times by at least that. (Not by at most about it: a
    return's own rules raise a user far behind further, and on a loaded machine a user falls
    far behind more often — 2.6 s raised against 1.2 s of gaps once under three busy loops,
    1.2-1.5 times the gaps in other loaded runs.)"""
    # (a device nobody used for 50 ms forgets every user's place, levelling them: on a
    # loaded machine both users were away that long now and then, and the levelling counted
    # as raised, 2.6 s against 1.2 s of gaps once; this test is of the round trips' charge)
    trace = run_syncing_users(tmp_path, {"a": 1, "b": 2}, "share", seconds=2.0, turns=True,
                              work=0.3, env={"GPUWB_SHARE_GAP_CHARGE_MS": "1000",
                                             "GPUWB_SHARE_FORGET_IDLE_MS": "600000"})
    idle_at: dict[str, float] = {}
    gaps = raised = 0.0
    charged = []
    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        user, msg = entry["user"], entry["msg"]
        if msg.get("t") == "idle":
            idle_at[user] = entry["t"]
        elif msg.get("t") == "want" and user in idle_at:
            users = entry["state"]["users"]
            weight = users[user]["weight"]
            gaps += entry["t"] - idle_at.pop(user)
            raised += (entry["vt"][user] - users[user]["vt"]) * weight
            charged.append(entry["state"].get("gaps_charged"))
    assert gaps > 0.05, gaps                      # (many returns: ~hundreds of reads)
    assert charged and charged[-1], charged[-1:]
    assert 0.5 * gaps <= charged[-1] <= 2.0 * gaps, (charged[-1], gaps)
    assert raised >= 0.5 * charged[-1], (raised, charged[-1])


@pytest.mark.parametrize("paced", [False, True], ids=["graphed", "paced"])
def test_priced_replays_reach_the_arbiter_apart_and_the_weights_still_hold(tmp_path, paced):
    """With the workers pricing their replays (``GPUWB_SHARE_PRICED=1``,
    worker/replay_prices.py), each user's syncing loop is a held stretch replayed beside
    the other's, charged its own cost: the workers' reports carry it apart (``own``), never
    more than their ``busy`` and never going back, for both users; each user's part of the
    time charged stays nearer its weight's than an even split's (the comment at the end).
    *paced*: every replay beside the other is re-run from its records, paced, as a GPU's
    long replays are (``GPUWB_UNPACED_REPLAY_US=0``): the stretch stays held all the same (the replies'
    ``f`` 2), so the priced replays are most of what each user is charged. Counted stale,
    a GPU's syncing users' loops were dropped after three paced replays and ran as ordinary
    batches, 5-14 % of their time priced (H200 runs 321-322; here 3-6 %). (Graphed, how
    much is priced is the client's timing's: on this device graphs run these GEMMs no
    faster than their ops pipelined, and the stretch is let go and tried again, 7-90 % of
    the charge priced from run to run.) No replay is run ahead of its message beside the other
    (``GPUWB_RUN_AHEAD_BESIDE=0``): one run ahead is not priced (worker/replay_prices.py),
    and whether these loops' replays, about the run ahead's 2 ms bound on this device, run
    ahead is the host's speed (a loaded CI host priced a fifth of a user's charge)."""
    weights = {"a": 1, "b": 2}
    env = {"GPUWB_SHARE_PRICED": "1", "GPUWB_RUN_AHEAD_BESIDE": "0",
           **({"GPUWB_UNPACED_REPLAY_US": "0"} if paced else {})}
    trace = run_syncing_users(tmp_path, weights, "share", turns=True, env=env)
    last: dict[str, tuple[float, float]] = {}
    for line in trace.read_text().splitlines():
        entry = json.loads(line)
        msg = entry["msg"]
        if "own" in msg:
            assert 0 < msg["own"] <= msg["busy"], msg
            assert msg["own"] >= last.get(entry["user"], (0.0, 0.0))[0], msg
            last[entry["user"]] = (msg["own"], msg["busy"])
    assert set(last) == set(weights), last        # both users' replays were priced
    if paced:
        for user, (own, busy) in last.items():
            assert own >= 0.25 * busy, (user, own, busy)
    # (each user's part nearer its weight's than an even split's, where that is below its
    # weight's part less 0.05 as the unpriced test asks: in one full run of the suite in four,
    # with four test processes on two cores, the weight-2 user got 0.598 here, where this
    # test alone gives it 0.80-0.88 also beside four busy loops; an even split gives 0.50)
    shares, _ = _trace_shares(trace)
    total_w = sum(weights.values())
    for u, w in weights.items():
        share, seconds = shares[u]
        assert seconds > 0.2, shares
        assert share >= min(w / total_w - 0.05, (w / total_w + 1 / len(weights)) / 2), (u, shares)
