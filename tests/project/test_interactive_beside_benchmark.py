"""benchmarks/interactive_beside.py: an interactive user's latency beside a busy one, two
settings of the workers side by side. Runs the benchmark itself on the NumPy device taking
turns as one GPU: its timings mean nothing here; that each side ran with its own settings,
every request timed, does: one side makes a run ahead's reads at once beside the client's
10 ms gaps, the side with ``GPUWB_READ_GAP_SHARE=0`` makes none (the run ahead's own 50 µs
bound, ``GPUWB_READ_AHEAD_US``, is 0 on both, so only the gaps make reads at once)."""

import json
import os
import subprocess
import sys

from tests.paths import PROJECT_ROOT


BENCHMARK = str(PROJECT_ROOT / "benchmarks" / "interactive_beside.py")


def _run(tmp_path, *args) -> tuple[dict, str]:
    """The benchmark on the NumPy device with *args*: its JSON and its printed table. (Its
    stretch held without timing its replays: a loaded machine's timings would decide how
    many replays come, and so the reads.)"""
    out = tmp_path / "interactive.json"
    done = subprocess.run([sys.executable, BENCHMARK, "--devices", "cpu", *args, "--json", str(out)],
                          env={**os.environ, "GPUWB_REPLAY_MEASURED": "0"},
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(out.read_text()), done.stdout


def test_the_interactive_benchmark_runs_each_side_with_its_settings(tmp_path):
    result, stdout = _run(tmp_path, "--turns", "--requests", "20", "--sides",
                          "GPUWB_READ_AHEAD_US=0,GPUWB_READ_AHEAD_US=0+GPUWB_READ_GAP_SHARE=0")
    sides = result["sides"]
    gaps, bound = sides["GPUWB_READ_AHEAD_US=0"], sides["GPUWB_READ_AHEAD_US=0+GPUWB_READ_GAP_SHARE=0"]
    assert bound["variables"] == {"GPUWB_READ_AHEAD_US": "0", "GPUWB_READ_GAP_SHARE": "0"}
    for side in (gaps, bound):
        assert side["requests"] == 20 and side["p50_ms"] > 0 and side["replays"] >= 20
    assert gaps["ahead_read"] >= 1 and bound["ahead_read"] == 0, sides
    assert "p50 ms" in stdout


def test_a_gemm_user_and_a_policy_per_side(tmp_path):
    """``--busy gemm:N`` puts a GEMM loop beside the interactive user, and ``policy=NAME`` in a
    side runs that side's pool under that policy (the others under ``--policy``); a busy kind
    it does not know is refused before any pool starts."""
    result, _ = _run(tmp_path, "--requests", "10", "--busy", "gemm:48", "--sides", "default,policy=none")
    assert result["busy"] == "gemm:48"
    sides = result["sides"]
    assert sides["default"]["policy"] == "share" and sides["policy=none"]["policy"] == "none"
    assert sides["policy=none"]["variables"] == {}
    for side in sides.values():
        assert side["requests"] == 10 and side["replays"] >= 10
    refused = subprocess.run([sys.executable, BENCHMARK,
                              "--devices", "cpu", "--busy", "gemm:x"], capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "--busy is elementwise, gemm:N or none" in refused.stderr
    refused = subprocess.run([sys.executable, BENCHMARK,
                              "--devices", "cpu", "--sides", "default,policy=nobody"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "a side's policy is one of" in refused.stderr


def test_the_user_alone_beside_local_numpy_with_a_side_measured_twice(tmp_path):
    """``--busy none``: the interactive user alone; the side ``local`` times the same requests
    on the local module (NumPy here), and a side named twice is measured twice."""
    result, _ = _run(tmp_path, "--requests", "10", "--busy", "none", "--sides", "local,default,default")
    assert result["busy"] == "none" and set(result["sides"]) == {"local", "default", "default #2"}
    local = result["sides"]["local"]
    assert local["policy"] == "local numpy" and local["requests"] == 10 and local["replays"] is None
    for side in ("default", "default #2"):
        assert result["sides"][side]["requests"] == 10 and result["sides"][side]["replays"] >= 10
