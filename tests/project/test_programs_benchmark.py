"""benchmarks/programs.py: whole programs give the same results through the proxy as locally.

Runs the benchmark itself (small sizes, one round) on the NumPy device: its timings mean
nothing here, its result check, its sides and its table's targets do.
"""

import json
import subprocess
import sys

import pytest

from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT
ISSUE_37 = {"black_scholes", "kmeans", "conjugate_gradient", "mlp_training", "stencil", "random_walk",
            "hot_sync"}
ISSUE_50 = {"chain20", "heat2d", "heat2d_2048", "monte_carlo_pi", "mc_option", "nbody", "logistic_regression",
            "loss_and_accuracy",
            "no_sync_loop", "sgd_minibatch", "wave_no_sync", "momentum_no_sync"}
#: loops with no sync point: cut into pieces that repeat (kernelproxy/loop_cuts.py)
NO_SYNC = {"no_sync_loop", "wave_no_sync", "momentum_no_sync"}
#: (drawn by the device's generator: on NumPy compared with nothing)
DRAWS = {"random_walk", "monte_carlo_pi", "mc_option"}


def _run(tmp_path, *args):
    out = tmp_path / "programs.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "programs.py"), "--quick",
                           "--devices", "cpu", "--rounds", "1", "--json", str(out), *args],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text()), done.stdout


@pytest.mark.timeout(300)   # (seven programs, three sides, a subprocess: over 120 s when loaded)
def test_every_program_gives_the_local_result_over_both_transports(tmp_path):
    results, stdout = _run(tmp_path, "--transports", "ipc,tcp", "--programs", ",".join(sorted(ISSUE_37)))
    assert results["failures"] == []
    assert set(results["programs"]) == ISSUE_37
    for name, row in results["programs"].items():
        assert set(row) == {"local", "proxy_ipc", "proxy_tcp"}, name
        assert all(row[side]["same_result"] for side in ("proxy_ipc", "proxy_tcp")), name
    assert "black_scholes" in stdout and "ratio" in stdout


@pytest.mark.timeout(300)
def test_issue_50s_programs_bitwise_beside_replay_off_and_the_fast_path_off(tmp_path):
    """The new programs on the default sides (replay on, early replay off, the fast path off, replay
    off), each result bitwise equal to local's (NumPy's, where the device's generator is
    not in it), each side's ratio judged against its program's target."""
    results, stdout = _run(tmp_path, "--programs", ",".join(sorted(ISSUE_50)))
    assert results["failures"] == [] and results["not_bitwise"] == []
    assert set(results["programs"]) == ISSUE_50
    sides = {"proxy_ipc", "proxy_ipc-noearly", "proxy_ipc-nofast", "proxy_ipc-nographs"}
    for name, row in results["programs"].items():
        assert set(row) == {"local"} | sides, name
        for side in sides:
            assert row[side]["compared"] == (name not in DRAWS), (name, side)
            assert row[side]["bitwise_local"] or name in DRAWS, (name, side)
            assert row[side]["target"] == 0.5, name   # (every one a loop of >= 20 iterations)
            assert row[side]["met"] == (row[side]["vs_local"] <= row[side]["target"]), (name, side)
    assert results["client_stretches"]["ipc-nographs"] is None   # replay off: no client counts
    for name in NO_SYNC:   # (pieces of >= 32 ops, held within REPEATS + PIECES_AHEAD + 1 of them)
        assert results["programs"][name]["proxy_ipc"]["replays_median"] >= 10, name
    assert "targets: every program <= 1.00x local" in stdout and "ipc-nofast" in stdout
