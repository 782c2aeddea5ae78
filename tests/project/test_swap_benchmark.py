"""benchmarks/swap.py: an idle session swapped out and back, bitwise, through host memory and
through the swap directory, beside the host's copy rate; many cycles leaking nothing; and several users taking turns on a device smaller than their notebooks, every turn
served. Runs the benchmark itself on the NumPy device (small sizes): its timings mean
nothing here, its counts and checks do."""

import json
import subprocess
import sys

from tests.paths import PROJECT_ROOT

SCRIPT = str(PROJECT_ROOT / "benchmarks" / "swap.py")


def test_one_session_swaps_out_and_back_bitwise(tmp_path):
    out = tmp_path / "swap.json"
    done = subprocess.run([sys.executable, SCRIPT, "--gib", "0.05", "--arrays", "3", "--cycles", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert [r["tier"] for r in result["runs"]] == ["host", "file"]   # both tiers, one run
    assert len(result["cycles"]) == 4 and result["reference"]["bytes"] > 0
    for cycle in result["cycles"]:
        assert cycle["bitwise"] and cycle["bytes"] >= 0.05 * (1 << 30) * 0.99
        assert cycle["memory_swapped"] < cycle["bytes"] and cycle["out_s"] > 0 and cycle["in_s"] > 0
        assert cycle["host_bytes"] == (cycle["bytes"] if cycle["tier"] == "host" else 0)


def test_swap_cycles_leak_nothing(tmp_path):
    """The leak check's part (issue 52's "1 000 swap cycles leak nothing"), few cycles here."""
    out = tmp_path / "leak.json"
    done = subprocess.run([sys.executable, SCRIPT, "--leak-cycles", "20", "--leak-mib", "2",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["cycles"] == 20 and result["bitwise"] and result["leaked"] == []
    assert result["after"]["swap_files"] == 0 and result["after"]["budget_held"] == 0


def test_users_in_turn_on_a_full_device_are_all_served(tmp_path):
    out = tmp_path / "turns.json"
    done = subprocess.run([sys.executable, SCRIPT, "--users", "3", "--user-gib", "0.02",
                           "--device-gib", "0.05", "--turns", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["errors"] == [] and len(result["rows"]) == 6
    assert all(r.get("bitwise", True) for r in result["rows"])
    assert any(r["was_swapped"] for r in result["rows"])   # the device held two of the three
