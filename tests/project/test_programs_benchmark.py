"""benchmarks/programs.py: whole programs give the same results through the proxy as locally.

Runs the benchmark itself (small sizes, one round) on the NumPy device, over both
transports: its timings mean nothing here, its result check does.
"""

import json
import subprocess
import sys
from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT


def test_every_program_gives_the_local_result_over_both_transports(tmp_path):
    out = tmp_path / "programs.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "programs.py"), "--quick",
                           "--devices", "cpu", "--rounds", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["failures"] == []
    assert set(results["programs"]) == {"black_scholes", "kmeans", "conjugate_gradient", "mlp_training",
                                        "stencil", "random_walk", "hot_sync"}
    for name, row in results["programs"].items():
        assert set(row) == {"local", "proxy_ipc", "proxy_tcp"}, name
        assert all(row[side]["same_result"] for side in ("proxy_ipc", "proxy_tcp")), name
    assert "black_scholes" in done.stdout and "ratio" in done.stdout
