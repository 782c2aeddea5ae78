"""``share`` assumes a silent session's part of the device (SharePolicy._assume_silent).

A worker reports its device time at its markers; a long op places none until it ends, and
the users ahead of that session's user are held back for the whole op. In the tests'
simulator (virtual time, processor sharing), a session whose reports come every 100 ms or
every second beside two syncing users. On by default in the pool since run 330 (an H200
beside GEMMs of ~150 ms: docs/fair-share.md); a policy made alone has it off.
"""

from __future__ import annotations

from gpu_backend.arbiter.choose import make_policy
from gpu_backend.arbiter.policy import Yield
from gpu_backend.arbiter.share import OWN_SILENT_AFTER, WINDOW, SharePolicy
from gpu_backend.config import PoolSettings

from tests.gpu_backend.test_share_policy import Clock
from tests.share_sim import ShareDevice, ShareSession


def _parts_and_waits(policy: SharePolicy, sessions: list, seconds: float = 3.0
                     ) -> tuple[dict, dict]:
    """Each session's part of the device over *seconds* after a settle, and each closed
    loop's longest wait between two of its batches, in the tests' simulator under *policy*."""
    device = ShareDevice(policy, sessions, tail=0.002, lead=0.002, lead_wall=True,
                         jitter=0.5, seed=1)
    device.run(0.5)
    got = {s.sid: s.got for s in sessions}
    loops = [s for s in sessions if s.think is not None]
    start = device.now
    last = {s.sid: start for s in loops}
    batch = {s.sid: s.next_batch for s in loops}
    waits = dict.fromkeys(last, 0.0)
    while device.now < start + seconds:
        device.step()
        for s in loops:
            if s.next_batch != batch[s.sid]:   # (its read returned: a batch done)
                batch[s.sid] = s.next_batch
                waits[s.sid] = max(waits[s.sid], device.now - last[s.sid])
                last[s.sid] = device.now
    return {s.sid: (s.got - got[s.sid]) / seconds for s in sessions}, waits


def _run(assume_silent: bool, report: float, whole_ops: bool = False) -> tuple[dict, dict]:
    """The parts and waits beside a saturating session whose worker reports every *report*
    seconds of its device time (*whole_ops*: its ops last that long each, and told to stop it
    stops at an op's end), two syncing users beside it."""
    sessions = [ShareSession("long", "long", report=report, whole_ops=whole_ops),
                ShareSession("s1", "s1", batch=0.004, think=0.0003),
                ShareSession("s2", "s2", batch=0.004, think=0.0003)]
    return _parts_and_waits(SharePolicy(assume_silent=assume_silent), sessions)


def test_users_held_back_for_a_silent_session_go_as_its_assumed_part_passes_them():
    for report in (0.1, 1.0):
        parts, waits = _run(True, report)
        assert all(abs(part - 1 / 3) < 0.01 for part in parts.values()), (report, parts)
        assert max(waits.values()) < 0.03, (report, waits)   # (a few of their batches)
        # without the assumption the syncing users wait for the long session's reports
        parts, waits = _run(False, report)
        assert min(waits.values()) > 0.8 * report, (report, waits)
        assert parts["long"] > 0.36, (report, parts)


def test_sessions_that_report_at_their_markers_are_split_as_before():
    for report in (0.001, 0.02):
        assumed, _ = _run(True, report)
        plain, _ = _run(False, report)
        assert all(abs(assumed[k] - plain[k]) < 0.003 for k in plain), (report, assumed, plain)
        assert all(abs(part - 1 / 3) < 0.01 for part in assumed.values()), (report, assumed)


def test_the_pools_setting_reaches_each_devices_share_policy(tmp_path, monkeypatch):
    """``share_assume_silent`` (GPUWB_SHARE_ASSUME_SILENT; on by default since run 330) is
    what the arbiter makes each device's ``share`` policy with."""
    import zmq

    from gpu_backend.arbiter.service import Arbiter
    from gpu_backend.config import PoolSettings

    assert PoolSettings().share_assume_silent is True
    monkeypatch.setenv("GPUWB_SHARE_ASSUME_SILENT", "0")
    settings = PoolSettings()
    assert settings.share_assume_silent is False
    for on in (True, settings.share_assume_silent):
        run_dir = tmp_path / str(on)
        run_dir.mkdir()
        arbiter = Arbiter(zmq.Context.instance(), "share", ["cpu"], run_dir=str(run_dir),
                          assume_silent=on)
        try:
            assert arbiter.policies["cpu"].assume_silent is on
        finally:
            arbiter.sock.close()


def test_what_is_assumed_of_an_op_that_cannot_stop_is_not_cut_short(monkeypatch):
    """A worker inside a NumPy op, or behind a long kernel's read, hears nothing till the op
    ends. Beside ops of 1.5 s (half a second of the device each, shared by three) the
    assumption must reach past half a second: at a cap of 250 ms it ran out within each op
    and the syncing users waited for the op's end (as on the NumPy device beside a 3 s op:
    3.7 s); at SILENT_CAP (2 s) they go on as beside short ops."""
    import gpu_backend.arbiter.share_silence as share

    parts, waits = _run(True, 1.5, whole_ops=True)
    assert max(waits.values()) < 0.03, waits
    assert all(abs(part - 1 / 3) < 0.02 for part in parts.values()), parts
    # (nothing assumed, the long session took most of the device: 0.90, the others 0.05)
    parts, waits = _run(False, 1.5, whole_ops=True)
    assert parts["long"] > 0.8 and min(waits.values()) > 1.0, (parts, waits)
    monkeypatch.setattr(share, "SILENT_CAP", 0.25)
    parts, waits = _run(True, 1.5, whole_ops=True)
    assert min(waits.values()) > 0.1, waits


def test_with_everyone_else_held_back_the_arbiters_own_deadline_assumes_the_silent_part():
    """Nothing but the arbiter's deadline comes while a silent session runs a long op and
    every other user is held back: its ticks alone must assume that session's part and let
    the others go as it passes them. The deadline was a quarter window ahead of whichever
    tick asked for it, so a tick never reached it, and in the simulation with the pool's
    defaults two syncing users beside ops of 150 ms waited 153 ms between batches."""
    clock = Clock()
    policy = SharePolicy(clock, assume_silent=True)
    policy.attach("long", "long", 4.0)
    policy.attach("s", "s", 1.0)
    policy.want("long")
    policy.want("s")
    actions = []
    while Yield("s", grant=policy.admitted["s"]) not in actions:
        clock.now += 0.001                      # both report each ms, charged half each,
        policy.used("long", clock.now)          # till s (weight 1) runs a window ahead of
        actions = policy.used("s", clock.now)   # long (weight 4); then long's op is silent
        assert clock.now < 0.05
    policy.release("s", clock.now, True, grant=policy.admitted["s"])
    assert "s" not in policy.admitted
    start, behind = clock.now, policy.lag("s")
    ticks = 0
    while "s" not in policy.admitted:           # only the ticks, at the arbiter's deadlines
        deadline = policy.next_deadline()
        assert deadline is not None and deadline > clock.now - 1e-12
        clock.now = deadline
        policy.tick()
        ticks += 1
        assert clock.now < 0.2, (ticks, policy.users["long"].vt, policy.users["s"].vt)
    # (let go once long's assumed part, a quarter of it in long's virtual time, brings s
    # back within half the window: about 4 × (behind - WINDOW / 2) of long's time alone)
    assert clock.now - start < 4 * behind + WINDOW, (clock.now - start, behind, ticks)
    assert policy.sessions["long"].assumed > 0


def _pool_share(sessions) -> tuple[dict, dict]:
    """The parts and waits under ``share`` as the pool makes it by default
    (PoolSettings.policy_options: deep lead, light gap, gap charge, the silent part assumed)."""
    return _parts_and_waits(make_policy("share", **PoolSettings().policy_options()), sessions)


def test_the_pools_default_share_beside_ops_of_150_ms():
    """The pool's own ``share`` (every default together), beside a session whose every op
    lasts 150 ms and cannot stop (run 330's 16384² GEMMs): a deep-queued user gets half;
    two syncing users are never held back for a whole op (waits of 17-18 ms against 153
    before the deadline was mended), and each gets about a third (less than a third by
    the round trips the gap charge bills them as their own time, 0.3 ms a 4 ms batch)."""
    parts, _ = _pool_share([ShareSession("long", "long", report=0.15, whole_ops=True),
                            ShareSession("small", "small")])
    assert abs(parts["long"] - 0.5) < 0.02 and abs(parts["small"] - 0.5) < 0.02, parts
    parts, waits = _pool_share([ShareSession("long", "long", report=0.15, whole_ops=True),
                                ShareSession("s1", "s1", batch=0.004, think=0.0003),
                                ShareSession("s2", "s2", batch=0.004, think=0.0003)])
    assert max(waits.values()) < 0.04, waits
    assert 0.30 < parts["s1"] < 1 / 3 + 0.01 and 0.30 < parts["s2"] < 1 / 3 + 0.01, parts
    assert parts["long"] < 0.37, parts


def test_the_pools_default_share_keeps_syncing_users_weights():
    """The same, three syncing users 1:2:4 (8 ms batches, a 0.3 ms round trip): each
    within 2 % of its weight's part of the device."""
    sessions = [ShareSession(u, u, w, batch=0.008, think=0.0003)
                for u, w in (("a", 1.0), ("b", 2.0), ("c", 4.0))]
    parts, _ = _pool_share(sessions)
    for s in sessions:
        target = s.weight / 7
        assert abs(parts[s.sid] - target) / target < 0.02, parts


def test_where_reports_are_own_time_a_session_is_silent_only_past_tens_of_milliseconds():
    """On the NumPy device (reports of each worker's own CPU time) a worker silent for a few
    milliseconds is waiting for a core or its turn, not using the device: it is assumed its
    part only past OWN_SILENT_AFTER (a long NumPy op, silent for seconds, still is). Assumed
    at the window there, three syncing users 1:2:4 on a 2-core machine gave the weight-4
    user 0.52-0.54 of the time charged while it had work, against 0.65-0.67 without it."""
    for own_time, after in ((False, WINDOW), (True, OWN_SILENT_AFTER)):
        clock = Clock()
        policy = SharePolicy(clock, own_time=own_time, assume_silent=True)
        for user in ("long", "s"):
            policy.attach(user, user, 1.0)
        policy.want("long")
        policy.want("s")
        assumed_at = None
        while assumed_at is None:
            clock.now += 0.001
            policy.used("s", clock.now)             # s reports each ms; long is silent
            if policy.sessions["long"].assumed > 0:
                assumed_at = clock.now
            assert clock.now < 1.0
        # (long's part is half the wall time beside s: past *after* at twice it)
        assert 2 * after <= assumed_at <= 2 * after + 0.003, (own_time, assumed_at)


def test_the_arbiter_looks_for_silent_sessions_only_while_someone_is_held_back():
    """A session attached and idle (a notebook between cells) beside one that works holds
    nobody back, and the arbiter sets no deadline for the silent part: counting every
    session not admitted, it woke every millisecond while anyone worked beside an idle
    one. Once a user with work is held back, it does."""
    clock = Clock()
    policy = SharePolicy(clock, assume_silent=True)
    for user in ("a", "idle"):
        policy.attach(user, user, 1.0)
    policy.want("a")
    for _ in range(20):
        clock.now += 0.005
        policy.used("a", clock.now)
        assert policy.next_deadline() is None
    policy.attach("s", "s", 1.0)
    policy.want("s")
    actions = []
    while Yield("s", grant=policy.admitted["s"]) not in actions:   # s runs ahead, a is silent
        clock.now += 0.001
        actions = policy.used("s", clock.now)
        assert clock.now < 1.0
    policy.release("s", clock.now, True, grant=policy.admitted["s"])
    assert policy.next_deadline() is not None
