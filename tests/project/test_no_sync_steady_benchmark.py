"""benchmarks/no_sync_steady.py: loops with no sync point in their steady state. Runs the
benchmark itself (--quick) on the NumPy device: its timings mean nothing here; its sides,
its result check and that the cut side replays its pieces do."""

import json
import subprocess
import sys

from tests.paths import PROJECT_ROOT


def test_the_steady_state_benchmark_runs_every_side_and_checks_results(tmp_path):
    out = tmp_path / "steady.json"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "no_sync_steady.py"),
                           "--devices", "cpu", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["failures"] == [] and result["local_kind"] == "numpy"
    rows = result["rows"]
    for loop in ("relax", "momentum"):
        for side in ("local", "ipc 32", "ipc-nocuts"):
            assert rows[f"{loop} 2000 {side}"] > 0, (loop, side)
    assert rows["ipc stretches"]["fast"] > 0          # pieces answered from templates
    assert rows["ipc-nocuts stretches"]["fast"] == 0  # no cuts, no pieces
    assert "us/iteration" in done.stdout and "x local" in done.stdout
