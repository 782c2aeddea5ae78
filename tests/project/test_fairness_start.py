"""benchmarks/fairness.py's clients start together: each says when it has warmed up, and the
driver gives the go once all have (``run_clients``, ``fairness_clients.started``), moving
every start and stop by the same seconds where one warmed up after the planned start. Real
processes that warm up slowly stand for clients on a loaded machine: the driver's waits are
on files they write, never on the machine's speed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tests.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
import fairness  # noqa: E402
import fairness_clients  # noqa: E402

#: a client that warms up for argv[2] seconds, then starts as fairness's clients do
CLIENT = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, sys.argv[3])
    from fairness_clients import started
    spec = json.loads(sys.argv[1])
    time.sleep(float(sys.argv[2]))
    spec = started(spec)
    print(json.dumps([spec["start"], spec["stop"], time.monotonic()]), flush=True)
""")


def _spec(tmp_path, name: str, start: float, stop: float) -> dict:
    return {"user": name, "start": start, "stop": stop, "ready": str(tmp_path / f"{name}.ready"),
            "go": str(tmp_path / f"{name}.go")}


def _clients(tmp_path, warmups: dict[str, float], start: float, stop: float):
    specs = [_spec(tmp_path, name, start, stop) for name in warmups]
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, json.dumps(spec),
                               str(warmups[spec["user"]]), str(PROJECT_ROOT / "benchmarks")],
                              stdout=subprocess.PIPE, text=True)
             for spec in specs]
    return specs, procs


def _finish(procs) -> list[list[float]]:
    out = []
    for proc in procs:
        text, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        out.append(json.loads(text))
    return out


def test_a_client_that_warms_up_late_moves_everyones_start_with_it(tmp_path):
    planned = time.monotonic() + 0.1   # (before the slow one can have warmed up)
    specs, procs = _clients(tmp_path, {"quick": 0.0, "slow": 1.5}, planned, planned + 2.0)
    moved = fairness._go_when_warm(specs, procs)
    assert moved > 0
    (quick_start, quick_stop, quick_began), (slow_start, slow_stop, slow_began) = _finish(procs)
    assert quick_start == slow_start == planned + moved      # one start for all
    assert quick_stop == slow_stop == planned + 2.0 + moved  # and the same length
    assert quick_began >= quick_start and slow_began >= slow_start


def test_clients_warm_before_the_planned_start_keep_it(tmp_path):
    planned = time.monotonic() + 60.0   # (far later than any warm-up here)
    specs, procs = _clients(tmp_path, {"a": 0.0, "b": 0.2}, planned, planned + 1.0)
    try:
        assert fairness._go_when_warm(specs, procs) == 0.0
    finally:
        for proc in procs:
            proc.kill()


def test_a_client_that_ends_before_it_warms_up_is_reported(tmp_path):
    spec = _spec(tmp_path, "broken", time.monotonic() + 0.1, time.monotonic() + 1.0)
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(RuntimeError, match="client broken ended before it warmed up"):
        fairness._go_when_warm([spec], [proc])


def test_a_client_waits_for_the_go_and_takes_its_offset(tmp_path):
    spec = _spec(tmp_path, "c", time.monotonic() + 0.05, time.monotonic() + 1.0)
    later = {}

    def driver() -> None:
        while not (tmp_path / "c.ready").exists():
            time.sleep(0.005)
        later["went"] = time.monotonic()
        (tmp_path / "c.go.part").write_text("0.25")   # (written whole, as the driver does)
        (tmp_path / "c.go.part").rename(tmp_path / "c.go")

    thread = threading.Thread(target=driver)
    thread.start()
    got = fairness_clients.started(spec)
    thread.join()
    assert got["start"] == spec["start"] + 0.25 and got["stop"] == spec["stop"] + 0.25
    assert time.monotonic() >= got["start"] and "went" in later
