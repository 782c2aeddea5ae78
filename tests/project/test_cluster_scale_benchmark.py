"""benchmarks/cluster_scale.py drives the real front door with simulated hosts and reports
each phase (small figures: the point is that it runs and measures, not the numbers)."""

import json
import subprocess
import sys

from tests.paths import PROJECT_ROOT


def test_cluster_scale_benchmark_runs_every_phase(tmp_path):
    out = tmp_path / "scale.json"
    done = subprocess.run([sys.executable, "benchmarks/cluster_scale.py", "--hosts", "3",
                           "--gpus", "2", "--users", "12", "--sessions", "8", "--fill-rate", "20",
                           "--rates", "10,20", "--seconds", "0.5", "--json", str(out)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "first sign-in of 12 users" in done.stdout
    result = json.loads(out.read_text())
    assert result["devices"] == 6 and result["sign_in"]["users"] == 12
    assert result["fill"]["opened"] == 8 and result["fill"]["hello"]["n"] == 8
    assert [p["opened"] for p in result["phases"]] == [5, 10]
    for phase in (result["fill"], *result["phases"]):
        assert phase["errors"] == {} and phase["hello"]["p50_ms"] > 0
        assert phase["door_cpu"] >= 0
