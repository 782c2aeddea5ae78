"""``share`` assumes a silent session's part of the device (SharePolicy._assume_silent).

A worker reports its device time at its markers; a long op places none until it ends, and
the users ahead of that session's user are held back for the whole op. In the tests'
simulator (virtual time, processor sharing), a session whose reports come every 100 ms or
every second beside two syncing users. On by default in the pool since run 330 (an H200
beside GEMMs of ~150 ms: docs/fair-share.md); a policy made alone has it off.
"""

from __future__ import annotations

from gpu_backend.arbiter.share import SharePolicy

from tests.share_sim import ShareDevice, ShareSession


def _run(assume_silent: bool, report: float, seconds: float = 3.0,
         whole_ops: bool = False) -> tuple[dict, dict]:
    """Each user's part of the device over *seconds* (after a settle), and the longest wait
    of each syncing user between two of its batches, beside a saturating session whose
    worker reports every *report* seconds of its device time (*whole_ops*: its ops last that
    long each, and told to stop it stops at an op's end)."""
    sessions = [ShareSession("long", "long", report=report, whole_ops=whole_ops),
                ShareSession("s1", "s1", batch=0.004, think=0.0003),
                ShareSession("s2", "s2", batch=0.004, think=0.0003)]
    device = ShareDevice(SharePolicy(assume_silent=assume_silent), sessions, tail=0.002,
                         lead=0.002, lead_wall=True, jitter=0.5, seed=1)
    device.run(0.5)
    got = {s.sid: s.got for s in sessions}
    start = device.now
    last = {s.sid: start for s in sessions[1:]}
    batch = {s.sid: s.next_batch for s in sessions[1:]}
    waits = dict.fromkeys(last, 0.0)
    while device.now < start + seconds:
        device.step()
        for s in sessions[1:]:
            if s.next_batch != batch[s.sid]:   # (its read returned: a batch done)
                batch[s.sid] = s.next_batch
                waits[s.sid] = max(waits[s.sid], device.now - last[s.sid])
                last[s.sid] = device.now
    return {s.sid: (s.got - got[s.sid]) / seconds for s in sessions}, waits


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
    import gpu_backend.arbiter.share as share

    parts, waits = _run(True, 1.5, whole_ops=True)
    assert max(waits.values()) < 0.03, waits
    assert all(abs(part - 1 / 3) < 0.02 for part in parts.values()), parts
    # (nothing assumed, the long session took most of the device: 0.90, the others 0.05)
    parts, waits = _run(False, 1.5, whole_ops=True)
    assert parts["long"] > 0.8 and min(waits.values()) > 1.0, (parts, waits)
    monkeypatch.setattr(share, "SILENT_CAP", 0.25)
    parts, waits = _run(True, 1.5, whole_ops=True)
    assert min(waits.values()) > 0.1, waits
