"""benchmarks/fast_path_misses.py: where a program's held stretches leave the client's fast
path, counted on the NumPy device (the diagnostic that found a large upload's metadata
keeping logistic regression off its template on a GPU, H100 run 47)."""

import json
import os
import subprocess
import sys

import pytest

from tests.paths import PROJECT_ROOT


@pytest.mark.timeout(300)
def test_it_counts_the_replays_answered_from_templates_and_the_fall_backs(tmp_path):
    out = tmp_path / "misses.json"
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "benchmarks" / "fast_path_misses.py"), "--devices", "cpu",
         "--quick", "--runs", "1", "--programs", "chain20,heat2d", "--json", str(out)],
        capture_output=True, text=True, timeout=280,
        env={**os.environ, "GPUWB_REPLAY_MEASURED": "0"})   # (every stretch kept held)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    for name in ("chain20", "heat2d"):
        row = result["programs"][name]
        assert row["figures"]["replays"] > 0 and row["figures"]["fast"] >= row["figures"]["replays"] - 1, row
        assert row["templates"] and all(isinstance(n, int) and op for n, op in row["templates"]), row
        assert isinstance(row["fall_backs"], list) and isinstance(row["no_run"], dict)
    assert "from the template" in done.stdout
