"""The usage log: increases and peaks, surviving kill -9, summing, the live figures, the command."""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from datetime import datetime

import pytest

from gpu_backend.accounting.usage import UsageLog, default_log_path, parse_since, read_usage

T = 1_700_000_000.0          # a fixed past "now" for lines written with explicit timestamps


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_lines_hold_increases_and_the_session_peak(tmp_path):
    path = tmp_path / "usage.jsonl"
    log = UsageLog(path)
    log.open_session("s1", "alice", "cuda:0", "alice@laptop", now=T)
    log.report("s1", "alice", "cuda:0", {"device_s": 0.5, "ops": 10, "bytes_in": 100,
                                         "bytes_out": 0, "peak": 1000}, now=T + 1)
    log.report("s1", "alice", "cuda:0", {"device_s": 0.5, "ops": 10, "bytes_in": 100,
                                         "bytes_out": 0, "peak": 900}, now=T + 2)   # nothing new
    log.report("s1", "alice", "cuda:0", {"device_s": 0.8, "ops": 25, "bytes_in": 100,
                                         "bytes_out": 64, "peak": 800}, now=T + 3)
    log.report("s1", "alice", "cuda:0", {"peak": 4000}, now=T + 4)   # only the peak grew
    log.report("s1", "alice", "cuda:0", {"device_s": 0.7, "ops": 20}, now=T + 5)   # backwards: no line
    log.close_session("s1", "closed by the client",
                      {"device_s": 1.0, "ops": 30, "bytes_in": 100, "bytes_out": 64, "peak": 4000},
                      now=T + 6)
    log.close()
    got = lines(path)
    assert [g["t"] for g in got] == ["open", "use", "use", "use", "use", "close"]
    assert got[0] == {"t": "open", "ts": T, "session": "s1", "user": "alice", "device": "cuda:0",
                      "client": "alice@laptop"}
    counters = [{k: g[k] for k in ("device_s", "ops", "bytes_in", "bytes_out", "peak")}
                for g in got[1:5]]
    assert counters == [
        {"device_s": 0.5, "ops": 10, "bytes_in": 100, "bytes_out": 0, "peak": 1000},
        {"device_s": 0.3, "ops": 15, "bytes_in": 0, "bytes_out": 64, "peak": 1000},
        {"device_s": 0.0, "ops": 0, "bytes_in": 0, "bytes_out": 0, "peak": 4000},
        {"device_s": 0.2, "ops": 5, "bytes_in": 0, "bytes_out": 0, "peak": 4000},
    ]
    assert [g["ts"] for g in got] == [T, T + 1, T + 3, T + 4, T + 6, T + 6]
    assert all((g["session"], g["user"], g["device"]) == ("s1", "alice", "cuda:0") for g in got)
    assert got[-1]["reason"] == "closed by the client"
    [row] = read_usage(path)
    assert row == {"user": "alice", "sessions": 1, "device_s": 1.0, "ops": 30, "bytes_in": 100,
                   "bytes_out": 64, "errors": 0, "waited_s": 0.0, "worked_s": 0.0, "peak": 4000, "first": T, "last": T + 6}


def test_many_small_increases_add_up_without_drift(tmp_path):
    path = tmp_path / "usage.jsonl"
    with UsageLog(path) as log:
        log.open_session("s", "u", "cpu:0", now=T)
        total = 0.0
        for i in range(1000):
            total += 0.0001234567
            log.report("s", "u", "cpu:0", {"device_s": total, "ops": i + 1}, now=T + i / 100)
        log.close_session("s", "end", {"device_s": total, "ops": 1000}, now=T + 10)
    [row] = read_usage(path)
    assert row["ops"] == 1000
    assert abs(row["device_s"] - total) < 1e-6


def test_a_new_log_is_private_and_its_directories_are_made(tmp_path, monkeypatch):
    path = tmp_path / "state" / "gpuwb" / "usage.jsonl"
    UsageLog(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_log_path() == tmp_path / "xdg" / "gpuwb" / "usage.jsonl"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_log_path() == tmp_path / "home" / ".local" / "state" / "gpuwb" / "usage.jsonl"


def test_lines_reach_the_file_at_flush_and_at_most_a_second_apart(tmp_path):
    path = tmp_path / "usage.jsonl"
    log = UsageLog(path)
    log.open_session("s", "u", "cpu:0", now=T)
    assert path.read_text() == ""                     # buffered
    log.maybe_flush(100.0)                            # the first call writes
    assert len(lines(path)) == 1
    log.report("s", "u", "cpu:0", {"ops": 1}, now=T + 0.1)
    log.maybe_flush(100.5)
    assert len(lines(path)) == 1                      # less than a second since the last flush
    log.maybe_flush(101.0)
    assert len(lines(path)) == 2
    log.report("s", "u", "cpu:0", {"ops": 2}, now=T + 0.2)
    log.flush()
    assert [g["ops"] for g in lines(path)[1:]] == [1, 1]
    log.close()


def test_the_embedded_pool_keeps_figures_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    log = UsageLog(None)
    log.open_session("s", "default", "cpu:0", "me@laptop", now=T)
    log.report("s", "default", "cpu:0", {"device_s": 0.25, "ops": 3, "peak": 7}, now=T + 1)
    log.maybe_flush()
    log.close_session("s", "closed", {"device_s": 0.5, "ops": 4, "peak": 7}, now=T + 2)
    log.close()
    assert list(tmp_path.iterdir()) == []
    assert log.totals() == {"default": {"sessions": 1, "device_s": 0.5, "ops": 4, "bytes_in": 0,
                                        "bytes_out": 0, "errors": 0, "waited_s": 0.0, "worked_s": 0.0, "peak": 7}}


def test_a_late_report_after_close_is_not_counted_again():
    log = UsageLog(None)
    log.open_session("s", "u", "cpu:0", now=T)
    log.close_session("s", "ended", {"device_s": 1.0, "ops": 5}, now=T + 1)
    log.report("s", "u", "cpu:0", {"device_s": 1.5, "ops": 6}, now=T + 2)
    assert log.totals()["u"]["device_s"] == 1.0 and log.totals()["u"]["ops"] == 5


WRITER = """
import sys, time
from gpu_backend.accounting.usage import UsageLog
log = UsageLog(sys.argv[1])
log.open_session("run1", "alice", "cpu:0", "killed@test")
print("ready", flush=True)
i = 0
while True:
    i += 1
    log.report("run1", "alice", "cpu:0", {"device_s": i / 1000, "ops": i, "bytes_in": 8 * i,
                                          "bytes_out": 0, "peak": 64 * i})
    print(time.time(), i, flush=True)
    log.maybe_flush(time.monotonic())
    time.sleep(0.01)
"""


def test_kill_9_loses_at_most_the_last_second_and_a_restart_appends(tmp_path):
    path = tmp_path / "usage.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert writer.stdout.readline() == "ready\n"
        time.sleep(3.0)
    finally:
        killed_at = time.time()
        os.kill(writer.pid, signal.SIGKILL)
        # read the rest through the same text stream readline used: communicate() with a timeout
        # reads the pipe's descriptor directly and would drop what readline had buffered past
        # "ready", leaving a line cut at its start
        out = writer.stdout.read()
        writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    # the kill may cut the last line short: only lines that were written whole count
    progress = [(float(t), int(i)) for t, i in (line.split() for line in out.split("\n")[:-1])]
    due = max(i for t, i in progress if t < killed_at - 1.5)   # the flush period, a loop turn, slack
    assert due > 50
    rows = read_usage(path)
    assert all(number == len(path.read_bytes().splitlines()) for number, _ in rows.skipped)
    [row] = rows
    written = row["ops"]
    assert due <= written <= progress[-1][1] + 1
    assert (row["sessions"], row["bytes_in"], row["peak"]) == (1, 8 * written, 64 * written)
    assert abs(row["device_s"] - written / 1000) < 1e-6

    with UsageLog(path) as restarted:                 # the pool starts again: same file
        restarted.open_session("run2", "alice", "cpu:0", "again@test")
        restarted.close_session("run2", "closed", {"device_s": 2.0, "ops": 7, "peak": 1})
        restarted.open_session("run3", "bob", "cpu:0", "bob@test")
        restarted.close_session("run3", "closed", {"device_s": 0.5, "ops": 1})
    alice, bob = read_usage(path)
    assert (alice["user"], alice["sessions"], alice["ops"]) == ("alice", 2, written + 7)
    assert abs(alice["device_s"] - (written / 1000 + 2.0)) < 1e-6
    assert alice["peak"] == 64 * written
    assert (bob["user"], bob["sessions"], bob["ops"], bob["device_s"]) == ("bob", 1, 1, 0.5)


def test_a_line_cut_short_is_skipped_and_the_next_writer_starts_a_fresh_line(tmp_path):
    path = tmp_path / "usage.jsonl"
    with UsageLog(path) as log:
        log.open_session("s1", "alice", "cuda:0", now=T)
        log.report("s1", "alice", "cuda:0", {"device_s": 1.0, "ops": 2}, now=T + 1)
    whole = path.read_bytes()
    with open(path, "ab") as f:                       # what a kill in the middle of a write leaves
        f.write(b'{"t": "use", "ts": 1700000002.0, "session": "s1", "user": "alice", "dev')
    rows = read_usage(path)
    assert rows.skipped == [(3, "cut short")] and rows[0]["ops"] == 2

    with UsageLog(path) as log:
        log.open_session("s2", "alice", "cuda:0", now=T + 10)
        log.report("s2", "alice", "cuda:0", {"device_s": 0.5, "ops": 3}, now=T + 11)
    assert path.read_bytes().startswith(whole)
    rows = read_usage(path)
    assert rows.skipped == [(3, "malformed")]         # now ended by a newline; s2's lines are whole
    [row] = rows
    assert (row["sessions"], row["device_s"], row["ops"]) == (2, 1.5, 5)


def test_malformed_lines_are_skipped_and_counted(tmp_path):
    path = tmp_path / "usage.jsonl"
    good = {"t": "use", "ts": T, "session": "s", "user": "u", "device": "cpu:0", "device_s": 1.0,
            "ops": 1, "bytes_in": 0, "bytes_out": 0, "peak": 0}
    bad = ["not json", "[1, 2]", json.dumps({**good, "t": "what"}), json.dumps({**good, "ops": -1}),
           json.dumps({**good, "ops": "1"}), json.dumps({**good, "ts": None}),
           json.dumps({k: v for k, v in good.items() if k != "user"}), json.dumps({**good, "peak": True})]
    path.write_text("\n".join([json.dumps(good), *bad, "", json.dumps(good)]) + "\n")
    rows = read_usage(path)
    assert rows.skipped == [(n, "malformed") for n in range(2, 10)]
    assert rows[0]["ops"] == 2 and rows[0]["device_s"] == 2.0


def write_three_sessions(path):
    """alice: a1 (day 0) and a2 (day 1, on cuda:1); bob: b1 (day 1)."""
    day = 86400
    with UsageLog(path) as log:
        log.open_session("a1", "alice", "cuda:0", "alice@laptop", now=T)
        log.report("a1", "alice", "cuda:0", {"device_s": 10.0, "ops": 100, "bytes_out": 1 << 20,
                                             "peak": 1 << 30}, now=T + 60)
        log.close_session("a1", "closed by the client", now=T + 61)
        log.open_session("a2", "alice", "cuda:1", "alice@desk", now=T + day)
        log.report("a2", "alice", "cuda:1", {"device_s": 1.5, "ops": 20, "bytes_in": 4096,
                                             "peak": 1 << 20}, now=T + day + 5)
        log.open_session("b1", "bob", "cuda:0", "bob@lab", now=T + day + 1)
        log.report("b1", "bob", "cuda:0", {"device_s": 3600.0, "ops": 7}, now=T + day + 9)
        log.close_session("b1", "lease expired", {"device_s": 3725.0, "ops": 9, "peak": 512},
                          now=T + day + 20)


def test_read_usage_since_user_and_by_session(tmp_path):
    path = tmp_path / "usage.jsonl"
    write_three_sessions(path)
    alice, bob = read_usage(path)
    assert (alice["sessions"], alice["device_s"], alice["ops"], alice["peak"]) == (2, 11.5, 120, 1 << 30)
    assert (bob["sessions"], bob["device_s"], bob["ops"], bob["peak"]) == (1, 3725.0, 9, 512)
    recent = read_usage(path, since=T + 3600)
    assert [(r["user"], r["sessions"], r["device_s"]) for r in recent] == [("alice", 1, 1.5),
                                                                           ("bob", 1, 3725.0)]
    assert read_usage(path, since=T + 86400 + 6, user="alice") == []
    assert [r["user"] for r in read_usage(path, user="bob")] == ["bob"]
    sessions = read_usage(path, by="session")
    assert [s["session"] for s in sessions] == ["a1", "a2", "b1"]
    a1, a2, b1 = sessions
    assert (a1["client"], a1["opened"], a1["closed"], a1["reason"]) == \
        ("alice@laptop", T, T + 61, "closed by the client")
    assert (a2["device"], a2["closed"], a2["reason"], a2["bytes_in"]) == ("cuda:1", None, None, 4096)
    assert (b1["user"], b1["reason"], b1["device_s"], b1["ops"]) == ("bob", "lease expired", 3725.0, 9)
    late = read_usage(path, since=T + 86400 + 10, by="session")   # b1's close only; client kept
    assert [(s["session"], s["client"], s["ops"]) for s in late] == [("b1", "bob@lab", 2)]
    with pytest.raises(ValueError):
        read_usage(path, by="device")


def test_a_log_from_before_the_errors_counter_still_reads(tmp_path):
    """Lines written before op errors were counted have no "errors": they read as 0."""
    path = tmp_path / "usage.jsonl"
    old = {"t": "use", "ts": T, "session": "s", "user": "alice", "device": "cuda:0",
           "device_s": 1.5, "ops": 3, "bytes_in": 0, "bytes_out": 0, "peak": 10}
    path.write_text(json.dumps(old) + "\n" + json.dumps({**old, "ts": T + 1, "errors": 2}) + "\n")
    rows = read_usage(path)
    assert rows.skipped == [] and rows[0]["errors"] == 2 and rows[0]["ops"] == 6


def test_parse_since():
    now = 2_000_000_000.0
    assert parse_since("90s", now) == now - 90
    assert parse_since("30m", now) == now - 1800
    assert parse_since("1h", now) == now - 3600
    assert parse_since("2d", now) == now - 2 * 86400
    assert parse_since("1.5h", now) == now - 5400
    assert parse_since("2026-11-22", now) == datetime(2026, 11, 22).timestamp()
    assert parse_since("2026-11-22T10:00", now) == datetime(2026, 11, 22, 10, 0).timestamp()
    assert parse_since("2026-11-22T10:00+00:00", now) == 1795341600.0
    for bad in ("", "yesterday", "5", "-1h", "1y", "2026-13-01"):
        with pytest.raises(ValueError):
            parse_since(bad, now)


def test_history_and_share_in_one_second_buckets():
    log = UsageLog(None)
    log.open_session("a", "alice", "cuda:0", now=1000.0)
    log.open_session("b", "bob", "cuda:1", now=1000.0)
    log.report("a", "alice", "cuda:0", {"device_s": 0.5}, now=1000.2)
    log.report("a", "alice", "cuda:0", {"device_s": 0.9}, now=1000.7)     # the same second
    log.report("b", "bob", "cuda:1", {"device_s": 0.3}, now=1001.1)
    log.report("a", "alice", "cuda:0", {"device_s": 1.5}, now=1002.5)
    log.report("a", "alice", "cuda:0", {"device_s": 1.6}, now=1003.2)     # the unfinished second
    h = log.history(5, now=1003.4)
    assert (h["t0"], h["step"]) == (998.0, 1.0)
    assert h["users"] == {"alice": [0.0, 0.0, 0.9, 0.0, 0.6], "bob": [0.0, 0.0, 0.0, 0.3, 0.0]}
    assert h["devices"] == {"cuda:0": {"alice": [0.0, 0.0, 0.9, 0.0, 0.6]},
                            "cuda:1": {"bob": [0.0, 0.0, 0.0, 0.3, 0.0]}}
    only = log.history(5, device="cuda:1", now=1003.4)
    assert only["users"] == {"bob": [0.0, 0.0, 0.0, 0.3, 0.0]} and list(only["devices"]) == ["cuda:1"]
    assert log.history(5, device="cuda:7", now=1003.4)["users"] == {}
    share = log.share(10, now=1003.4)
    assert share == pytest.approx({"alice": 1.5 / 1.8, "bob": 0.3 / 1.8})
    assert log.share(2, now=1003.4) == pytest.approx({"alice": 0.6 / 0.9, "bob": 0.3 / 0.9})
    assert log.share(10, device="cuda:0", now=1003.4) == {"alice": 1.0}
    assert log.share(10, now=5000.0) == {}
    assert log.share(10, now=1004.0) == pytest.approx({"alice": 1.6 / 1.9, "bob": 0.3 / 1.9})

    log.report("b", "bob", "cuda:1", {"device_s": 1.3}, now=1700.5)        # ten minutes on
    late = log.history(1000, now=1701.0)
    assert len(late["users"]["bob"]) == 600 and late["t0"] == 1101.0      # at most 600 s kept
    assert sum(late["users"]["bob"]) == 1.0 and "alice" not in late["users"]


def test_totals_over_the_lifetime_and_since():
    log = UsageLog(None)
    log.open_session("a1", "alice", "cuda:0", now=1000.0)
    log.report("a1", "alice", "cuda:0", {"device_s": 2.0, "ops": 4, "peak": 100}, now=1001.0)
    log.open_session("a2", "alice", "cuda:1", now=1010.0)
    log.report("a2", "alice", "cuda:1", {"device_s": 1.0, "ops": 1, "bytes_in": 9, "peak": 50},
               now=1011.0)
    log.open_session("b1", "bob", "cuda:0", now=1020.0)
    log.report("b1", "bob", "cuda:0", {"device_s": 0.5, "bytes_out": 3}, now=1020.5)
    assert log.device_seconds() == {"cuda:0": 2.5, "cuda:1": 1.0}
    assert log.totals() == {
        "alice": {"sessions": 2, "device_s": 3.0, "ops": 5, "bytes_in": 9, "bytes_out": 0, "errors": 0, "waited_s": 0.0, "worked_s": 0.0,
                  "peak": 100},
        "bob": {"sessions": 1, "device_s": 0.5, "ops": 0, "bytes_in": 0, "bytes_out": 3, "errors": 0, "waited_s": 0.0, "worked_s": 0.0,
                "peak": 0}}
    assert log.totals(since=0) == log.totals()
    assert log.totals(since=1010.5) == {
        "alice": {"sessions": 1, "device_s": 1.0, "ops": 1, "bytes_in": 9, "bytes_out": 0, "errors": 0, "waited_s": 0.0, "worked_s": 0.0,
                  "peak": 50},
        "bob": {"sessions": 1, "device_s": 0.5, "ops": 0, "bytes_in": 0, "bytes_out": 3, "errors": 0, "waited_s": 0.0, "worked_s": 0.0,
                "peak": 0}}
    assert log.totals(since=1021.0) == {}
    log.report("b1", "bob", "cuda:0", {"device_s": 1.5}, now=2000.0)
    with pytest.raises(ValueError, match="usage log"):
        log.totals(since=1005.0)                      # older than the 10 minutes kept
    assert log.totals()["bob"]["device_s"] == 1.5     # the lifetime figures stay exact


# -- the command ---------------------------------------------------------------------------------

def usage_command(*args, env=None):
    environment = {k: v for k, v in os.environ.items() if k != "GPUWB_USAGE_LOG"}
    environment.update({"COLUMNS": "200", **(env or {})})
    return subprocess.run([sys.executable, "-m", "gpu_backend.cli", "usage", *args],
                          capture_output=True, text=True, timeout=60, env=environment)


def test_the_command_prints_a_table_and_json(tmp_path):
    path = tmp_path / "usage.jsonl"
    write_three_sessions(path)
    out = usage_command("--log", str(path))
    assert out.returncode == 0, out.stderr
    table = out.stdout
    alice = next(line for line in table.splitlines() if " alice " in line)
    for cell in ("2", "11.50 s", "120", "4.0 KiB", "1.0 MiB", "1.0 GiB"):
        assert f" {cell} " in alice, (cell, alice)
    bob = next(line for line in table.splitlines() if " bob " in line)
    assert " 1h 02m " in bob and " 512 B " in bob
    assert " total " in table and " 3 " in next(line for line in table.splitlines() if " total " in line)
    assert out.stderr == ""

    out = usage_command("--log", str(path), "--json", "--user", "alice")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(read_usage(path, user="alice")))

    since = datetime.fromtimestamp(T + 3600).strftime("%Y-%m-%dT%H:%M")
    out = usage_command("--log", str(path), "--since", since, "--by", "session", "--json")
    assert [s["session"] for s in json.loads(out.stdout)] == ["a2", "b1"]
    out = usage_command("--log", str(path), "--since", since, "--by", "session")
    assert out.returncode == 0 and "alice@desk" in out.stdout and "bob@lab" in out.stdout
    assert "alice@laptop" not in out.stdout
    assert usage_command("--log", str(path), "--since", "1h", "--json").stdout.strip() == "[]"


def test_the_command_finds_its_log_and_says_what_is_wrong(tmp_path):
    path = tmp_path / "elsewhere.jsonl"
    write_three_sessions(path)
    out = usage_command("--json", env={"GPUWB_USAGE_LOG": str(path)})
    assert out.returncode == 0 and [r["user"] for r in json.loads(out.stdout)] == ["alice", "bob"]
    write_three_sessions(tmp_path / "gpuwb" / "usage.jsonl")
    out = usage_command("--json", env={"XDG_STATE_HOME": str(tmp_path)})
    assert out.returncode == 0 and len(json.loads(out.stdout)) == 2

    missing = usage_command("--log", str(tmp_path / "none.jsonl"))
    assert missing.returncode == 2 and missing.stdout == ""
    assert "no usage log at" in missing.stderr and "none.jsonl" in missing.stderr
    bad = usage_command("--log", str(path), "--since", "last tuesday")
    assert bad.returncode == 2 and "--since" in bad.stderr

    with open(path, "ab") as f:
        f.write(b'{"t": "use", "ts": 18')
    out = usage_command("--log", str(path), "--json")
    assert out.returncode == 0 and len(json.loads(out.stdout)) == 2
    assert "cut short" in out.stderr and "line 10" in out.stderr
