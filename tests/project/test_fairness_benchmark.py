"""benchmarks/fairness.py: a run without ``--scenarios`` covers every scenario the documents
quote (the long-kernel ones were left out of it: issue 53), ``--quick`` runs the same ones
for less time, and a run on the NumPy device finishes with a long-kernel scenario's results.

The run's figures mean nothing on the NumPy device of a busy machine; that it runs the
scenario it is asked for and writes its results does.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
import fairness  # noqa: E402
from fairness import SCENARIOS  # noqa: E402

#: the documents that quote the benchmark's scenarios and their figures
QUOTING = ("docs/fair-share.md", "docs/performance.md", "benchmarks/README.md")


def _quoted() -> set[str]:
    return {name for doc in QUOTING for name in SCENARIOS
            if name in (PROJECT_ROOT / doc).read_text()}


def test_a_default_run_covers_every_scenario_the_documents_quote():
    quoted = _quoted()
    assert {"interactive+long", "long-vs-small", "dl-mix"} <= quoted   # (what was left out)
    assert quoted <= set(fairness.DEFAULT_SCENARIOS), sorted(quoted - set(fairness.DEFAULT_SCENARIOS))
    default, quick = fairness.parse_args([]), fairness.parse_args(["--quick"])
    assert quoted <= set(default.names), sorted(quoted - set(default.names))
    assert quoted <= set(quick.names), sorted(quoted - set(quick.names))
    # --quick: the same scenarios, shorter
    assert quick.names == default.names
    assert quick.seconds < default.seconds and quick.calibrate_seconds < default.calibrate_seconds
    assert fairness.parse_args(["--scenarios", "two-1:1,dl-mix"]).names == ["two-1:1", "dl-mix"]


def test_an_unknown_scenario_is_refused_before_anything_runs():
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "fairness.py"),
                           "--scenarios", "two-1:1,long-vs-smal"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "no scenario long-vs-smal" in done.stderr, done.stderr


def test_policy_variants_set_the_pools_settings_in_any_order():
    """``share+nap500+sharelead2000`` and the same variants the other way round give the same
    workers' settings; a quantum, a period and a window are the pool's own arguments."""
    from fairness_variants import policy_variant
    one = policy_variant("share+nap500+sharelead2000")
    other = policy_variant("share+sharelead2000+nap500")
    assert one[0] == other[0] == "share" and one[2] == other[2] == {
        "GPUWB_SHARE_NAP_US": "500", "GPUWB_SHARE_LEAD_US": "2000"}
    assert policy_variant("share+nofill")[2] == {"GPUWB_SHARE_FILL": "0"}
    assert policy_variant("share+nodone")[2] == {"GPUWB_RELEASE_DONE": "0"}
    assert policy_variant("share+nosilent")[2] == {"GPUWB_SHARE_ASSUME_SILENT": "0"}
    assert policy_variant("share+fill+window2") == (
        "share", "share-fill-window2", {"GPUWB_SHARE_FILL": "1"}, ["--share-window-ms", "2"])
    assert policy_variant("share+deeplead16+window8")[3] == [
        "--share-window-ms", "8", "--share-deep-lead-ms", "16"]
    assert policy_variant("share+deeplead0")[3] == ["--share-deep-lead-ms", "0"]
    assert policy_variant("share+lightgap4+deeplead0")[1:] == (
        "share-lightgap4-deeplead0", {}, ["--share-deep-lead-ms", "0", "--share-light-gap-ms", "4"])
    assert policy_variant("fair:5")[3] == ["--quantum-ms", "5", "--period-ms", "0"]
    assert policy_variant("fair/10+lead600+nogap") == (
        "fair", "fair-p10-lead600-nogap", {"GPUWB_PACING_LEAD_US": "600", "GPUWB_GAP_RULE": "0"},
        ["--period-ms", "10"])


def test_an_unknown_policy_variant_is_refused_before_anything_runs():
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "fairness.py"),
                           "--policies", "none,share+fil"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "no variant 'fil'" in done.stderr, done.stderr


def test_a_long_kernel_scenario_runs_on_the_numpy_device(tmp_path):
    """Short and small (an explicit scenario, GEMMs of a few hundred elements a side): one
    policy's pool, its workloads measured alone, the scenario, its table and verdicts. (3 s;
    its start waits for every client's warm-up, fairness.run_clients: with a fixed lead, 3 s
    and then 8 s, under busy loops beside the suite's four processes on a 2-core machine,
    a client started late, its users never ran together and the scenario was void,
    fairness_report.MIN_COMMON.)"""
    out = tmp_path / "fairness.json"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "fairness.py"),
                           "--devices", "cpu", "--policies", "fair", "--calibrate", "fair",
                           "--scenarios", "long-vs-small", "--long", "192", "--small", "64",
                           "--big", "64", "--seconds", "3", "--calibrate-seconds", "1",
                           "--lead", "3", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["scenarios"] == ["long-vs-small"]
    assert set(results["exclusive"]["fair"]) >= {"long", "small"}
    row = results["policies"]["fair"]["long-vs-small"]
    assert set(row["normalised_rates"]) == {"a", "b"}, row["normalised_rates"]   # (both ran)
    assert row["start_moved_s"] >= 0
    assert "long-vs-small" in done.stdout


def test_the_interactive_users_answers_are_counted(tmp_path):
    """Beside its table, the run says how the interactive user's requests were answered (its
    replays, those answered from a run ahead, their reads made at once: issue 51's diagnosis
    of an interactive tail), from the session's own counters, and the client's side of them
    (stretches its timing let go, replays paced or not graphed)."""
    out = tmp_path / "fairness.json"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "fairness.py"),
                           "--devices", "cpu", "--policies", "share", "--calibrate", "share",
                           "--scenarios", "interactive+2048", "--mid", "64", "--small", "64",
                           "--big", "64", "--long", "64", "--seconds", "3", "--calibrate-seconds", "1",
                           "--lead", "3", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    row = json.loads(out.read_text())["policies"]["share"]["interactive+2048"]
    counts = row["stretches"]["i"]
    assert set(counts) == {"replays", "ahead", "ahead_read", "ahead_missed", "client"}
    assert counts["replays"] > 0, counts   # (its requests replayed a held stretch)
    client = counts["client"]
    assert client["replays"] > 0 and {"released", "paced", "not_graphed"} <= set(client), client
    assert "interactive+2048 share: i's replays" in done.stdout
    assert "stretches let go" in done.stdout


def test_interleaved_policies_run_each_scenario_back_to_back_in_rotated_orders(tmp_path):
    """``--interleave``: every policy's pool open at once, each scenario run under both
    policies back to back, the order rotated from one scenario to the next (``--rotate 1``
    starting one place on), so that the GPU's drift over a run falls on neither policy; the
    order run is in the JSON. On the NumPy device, two one-user scenarios of 2 s, one of them
    beside a notebook's idle session (``alone-sync+idle``: no work of its own, so judged as a
    lone user, its rate against ``none``'s)."""
    out = tmp_path / "fairness.json"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "fairness.py"),
                           "--devices", "cpu", "--policies", "none,share", "--calibrate", "none",
                           "--scenarios", "alone-sync+idle,alone-2048", "--interleave", "--rotate", "1",
                           "--sync", "64", "--mid", "64", "--small", "64", "--big", "64",
                           "--long", "64", "--seconds", "2", "--calibrate-seconds", "1",
                           "--lead", "3", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert results["order"] == [["alone-sync+idle", ["share", "none"]],
                                ["alone-2048", ["none", "share"]]]
    assert list(results["exclusive"]) == ["none"]   # (measured alone once, under none)
    for policy in ("none", "share"):
        for name in ("alone-sync+idle", "alone-2048"):
            row = results["policies"][policy][name]
            assert set(row["normalised_rates"]) == {"a"}, (policy, name, row)
            assert row["normalised_rates"]["a"] > 0, (policy, name, row)
    # (stderr says each run as it ends: the scenario's second policy right after its first)
    ends = [line.split()[:2] for line in done.stderr.splitlines() if line.endswith(" done")]
    assert ends == [["share", "alone-sync+idle"], ["none", "alone-sync+idle"],
                    ["none", "alone-2048"], ["share", "alone-2048"]], ends
    judged = {row["target"] for row in results["targets"]
              if row["policy"] == "share" and row["scenario"] == "alone-sync+idle"}
    assert "(51) alone a over none's" in judged, judged
