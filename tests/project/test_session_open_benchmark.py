"""benchmarks/session_open.py runs both ways (zygote, cold) and reports each."""

import json
import subprocess
import sys

from tests.paths import PROJECT_ROOT


def test_session_open_benchmark_measures_both_ways(tmp_path):
    out = tmp_path / "open.json"
    done = subprocess.run([sys.executable, "benchmarks/session_open.py", "--devices", "cpu",
                           "--sessions", "2", "--rounds", "1", "--json", str(out)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cold / zygote" in done.stdout
    result = json.loads(out.read_text())
    for way in ("zygote", "cold"):
        assert result[way]["n"] == 2 and result[way]["median_ms"] > 0
    assert result["cold_over_zygote"] > 0
