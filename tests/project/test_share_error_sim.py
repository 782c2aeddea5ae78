"""benchmarks/share_error_sim.py, and what it says of the policy: with each batch charged
what it got, ``share``'s own decisions keep every user's share of each second within issue
51's targets (≤ 2 % mean, ≤ 5 % p99), for users 1:2:4 and for six equal syncing users. The
misses measured on a GPU (2.4–3.1 % mean, run 320) therefore come from elsewhere: the
simulator puts them in what a batch is charged (docs/fair-share.md, "Fifteen-second
passes"). A virtual clock: no host's speed enters."""

import json
import subprocess
import sys

import pytest

from tests.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))

from share_error_sim import SCENARIOS, one_second_errors  # noqa: E402


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_exact_charges_keep_each_second_within_the_targets(scenario):
    errors = one_second_errors(SCENARIOS[scenario], seconds=4)
    assert errors["mean"] <= 0.02 and errors["p99"] <= 0.05, errors
    assert errors["work"] >= 0.95, errors


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_exact_charges_keep_each_second_within_the_targets_as_the_users_see_it(scenario):
    """Counted as fairness.py counts on a GPU (each user's completed batches, interpolated
    between its reads, and its p99), with the GPU scenarios' 8 ms batches: the measure's
    own floor (whole batches, completed when the sharing lets them). Its mean is within the
    target; its p99 within the target or one batch of the lightest user's second, whichever
    is more (1:2:4's weight-1 user completes about 18 a second: one is 5.6 % of it, and its
    worst second is that far off with every charge exact)."""
    weights = SCENARIOS[scenario]
    errors = one_second_errors(weights, seconds=4, batch=0.008)
    one_batch = 0.008 / (min(weights) / sum(weights))
    assert errors["seen_mean"] <= 0.02 and errors["seen_p99"] <= max(0.05, one_batch), errors
    assert errors["seen_mean"] >= errors["mean"] * 0.5, errors   # (counted: not empty)


def test_a_window_of_a_fifth_of_a_second_misses_them():
    """The check has teeth: held back only 200 ms ahead, users 1:2:4 drift past the p99."""
    errors = one_second_errors(SCENARIOS["sync-1:2:4"], window=0.2, seconds=4)
    assert errors["p99"] > 0.05, errors


def test_noisy_charges_move_each_seconds_shares(tmp_path):
    """The script: a window and a noise level swept for both scenarios, a table and JSON;
    charges off by 30 % a batch make the six equal users' error many times the exact one's."""
    out = tmp_path / "sim.json"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "share_error_sim.py"),
                           "--windows", "4", "--sigmas", "0,0.3", "--seconds", "3", "--seeds", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert {(r["scenario"], r["swept"]) for r in rows} == {
        (s, k) for s in SCENARIOS for k in ("window", "sigma")}
    six = {r["value"]: r for r in rows if r["scenario"] == "many-sync" and r["swept"] == "sigma"}
    assert six[0.3]["error_1s_mean"] > 5 * six[0.0]["error_1s_mean"], six
    assert "err 1 s" in done.stdout and "seen" in done.stdout
    assert all(0 <= r["seen_1s_mean"] <= r["seen_1s_p99"] for r in rows), rows
