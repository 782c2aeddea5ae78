"""benchmarks/held_loops.py: each loop's reads bitwise equal on every side, the client's
cost per op and the wall per iteration measured and judged against issue 50's targets.

Runs the benchmark itself (--quick --all-held, the NumPy device: no CUDA graph side; every
repeated stretch stays held, as timing on a busy machine could let one go): its timings mean
nothing here; its sides, its counts, its check and its verdicts do.
"""

import json
import subprocess
import sys
from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT


def test_held_loops_side_by_side_with_their_targets(tmp_path):
    out = tmp_path / "held.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "held_loops.py"), "--quick",
                           "--iterations", "30", "--all-held", "--devices", "cpu", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["local_kind"] == "numpy" and results["local_graph"].startswith("skipped")
    assert results["targets"] == {"issue_us_per_op": 3.0, "issue_vs_local": 0.25, "iteration_vs_local": 0.5}
    proxies = ["proxy_ipc", "proxy_ipc-noearly", "proxy_ipc-nofast", "proxy_ipc-nographs"]
    for name, ops in (("chain20", 20), ("heat2d", 14)):
        loop = results["loops"][name]
        assert loop["ops"] == ops and list(loop["sides"]) == ["local"] + proxies
        for side in ["local"] + proxies:
            row = loop["sides"][side]
            assert row["bitwise_local"], (name, side)
            assert len(row["iteration_rounds_us"]) == 2 and row["issue_us_per_op"] > 0, (name, side)
        for side in proxies:
            row = loop["sides"][side]
            assert row["client_ops"][0] == ops, (name, side)   # the body's ops, as the client counts
            assert row["issue_met"] == (row["issue_us_per_op"] <= 3.0 and row["issue_vs_local"] <= 0.25)
            assert row["iteration_met"] == (row["iteration_vs_local"] <= 0.5)
            assert loop["met"][side] == {"issue_per_op": row["issue_met"], "iteration": row["iteration_met"]}
        assert loop["sides"]["proxy_ipc"]["replayed"] > 0.5          # held after the warm-up (--all-held: never let go)
        assert loop["sides"]["proxy_ipc-nographs"]["replayed"] == 0  # replay off
    assert "targets: issue per op in a held stretch <= 3 us and <= 0.25x local's" in done.stdout
    assert "chain20: 20 elementwise ops on 1024 float32" in done.stdout


def test_held_loops_in_pools_of_their_own_say_which_ran_ahead(tmp_path):
    """--own-pools: each side alone in its own pool (the worker runs replays ahead only
    where nobody shares its device), a -noahead side in a pool that runs none ahead: the
    workers' own counts say so."""
    out = tmp_path / "held.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "held_loops.py"), "--quick",
                           "--iterations", "30", "--all-held", "--devices", "cpu", "--loops", "chain20",
                           "--own-pools", "--transports", "ipc,ipc-noahead", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    sides = results["loops"]["chain20"]["sides"]
    assert list(sides) == ["local", "proxy_ipc", "proxy_ipc-noahead"]
    assert all(row["bitwise_local"] for row in sides.values())
    assert results["stretches"]["ipc-noahead"]["ahead"] == 0      # its pool runs none ahead
    assert results["stretches"]["ipc"]["replays"] > 0
