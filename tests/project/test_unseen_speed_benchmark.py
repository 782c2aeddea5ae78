"""benchmarks/unseen_speed.py: the correctness campaign's loops timed through the pool against
the local module, side by side. On the NumPy device the ratios say nothing of a GPU; what is
checked is that the script runs the programs it is given, times both sides, compares their
results, says how each was served and sums them up by campaign, and that a program the
local module cannot run is listed, not failed."""

import json
import subprocess
import sys

import pytest

from tests.paths import PROJECT_ROOT

#: one of the first campaign's, one that draws, one CuPy alone defines (``rand(dtype=)``),
#: one that downloads results after its step's closing read
PROGRAMS = "long_body,draws_changing_size,draws_float32,edge_float_params"


@pytest.mark.timeout(300)
def test_the_unseen_loops_are_timed_beside_the_local_module(tmp_path):
    out = tmp_path / "speed.json"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "unseen_speed.py"),
                           "--devices", "cpu", "--rounds", "2", "--programs", PROGRAMS,
                           "--json", str(out)], capture_output=True, text=True, timeout=290)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    rows = {r["program"]: r for r in result["programs"]}
    timed = rows["long_body"]
    assert len(timed["calls"]["local"]) == len(timed["calls"]["proxy"]) == 2
    assert timed["ratio"] > 0 and timed["equal"] is True
    # (its loop held and replayed: a session's defaults serve it from its template)
    assert timed["served"]["replays"] > 0 and timed["served"]["fast"] > 0, timed
    assert timed["served"]["graphed"] > 0, timed
    assert rows["draws_changing_size"]["equal"] is None   # (NumPy's draws are not CuPy's)
    assert result["local_cannot"] == ["draws_float32"] and not result["with_problems"]
    assert result["summary"]["all"]["timed"] == 3
    # (its downloads after the closing read sent with the replies: kernelproxy/trailing_downloads.py)
    downloading = rows["edge_float_params"]["served"]
    assert downloading["prefetch_hits"] > 0 and downloading["prefetched"] > 0, downloading
    assert "x local numpy" in done.stdout


@pytest.mark.timeout(200)
def test_a_budget_spent_names_the_programs_not_begun(tmp_path):
    """``--budget``: no program is begun past it, and the JSON names those left, so that a
    GPU run's time limit keeps what was timed (run 298 lost its table at 149 of 280)."""
    out = tmp_path / "speed.json"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "unseen_speed.py"),
                           "--devices", "cpu", "--rounds", "1", "--programs", "long_body,draws_float32",
                           "--budget", "0", "--json", str(out)], capture_output=True, text=True,
                          timeout=190)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["programs"] == [] and result["not_begun"] == ["long_body", "draws_float32"]
    assert "not begun, past the budget of 0 s: 2 programs, from long_body" in done.stdout
