"""benchmarks/moves.py runs (issue 52: a move within a host and between two, a restart, a
park, timed and checked bitwise) on the NumPy device, small: its figures come from a GPU run
(docs/swap.md), this checks that the benchmark itself works and says what it measured."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.paths import PROJECT_ROOT


def test_the_moves_benchmark_moves_restarts_and_parks_a_session_bitwise(tmp_path):
    out = tmp_path / "moves.json"
    done = subprocess.run([sys.executable, "benchmarks/moves.py", "--devices", "cpu,cpu",
                           "--gib", "0.01", "--arrays", "3", "--json", str(out)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    runs = {r["what"]: r for r in result["runs"]}
    assert set(runs) == {"move", "move-hosts", "restart", "park"}
    assert runs["move-hosts"]["how"] == "lent, streamed" and runs["move-hosts"]["loopback_gbps"] > 0
    assert all(r["bitwise"] for r in runs.values())
    assert runs["move"]["from"] != runs["move"]["to"] and runs["move"]["how"] == "lent"
    assert runs["restart"]["moves"] == 1 and runs["park"]["moves"] == 1
    assert "what" in done.stdout and "bitwise" in done.stdout
