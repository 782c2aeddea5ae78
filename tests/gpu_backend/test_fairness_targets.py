"""The fairness benchmark's verdicts on issue 7's targets (benchmarks/fairness_targets.py) and
the busy fractions it reads from a real usage log (fairness.busy_from_log).

The verdicts are arithmetic over a run's results, so these tests hand them results shaped as
fairness.py writes them, with figures chosen so that each target lands on a known side of
its limit, and check the judgement, the size of each miss and the figures its *why* quotes.
"""

from __future__ import annotations

import sys

import pytest

from gpu_backend.accounting.usage import UsageLog

from tests.paths import PROJECT_ROOT  # noqa: E402
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
from fairness import SCENARIOS, busy_from_log  # noqa: E402
from fairness_report import analyse  # noqa: E402
from fairness_targets import targets_table, verdicts  # noqa: E402

BIG_RATE, SMALL_RATE = 1400.0, 17000.0   # GEMMs/s alone: 0.714 ms and 0.0588 ms each


def _exclusive(interactive_p99: float, big_mhz: float = 1440.0, small_mhz: float = 1980.0) -> dict:
    return {"big": {"rate": BIG_RATE, "gpu_clock": {"sm_mhz": big_mhz}},
            "small": {"rate": SMALL_RATE, "gpu_clock": {"sm_mhz": small_mhz}},
            "interactive": {"p50": 0.5, "p99": interactive_p99, "p999": 1.0}}


def _results(fair: dict, none: dict | None = None, interactive_p99: float = 0.9) -> dict:
    return {"exclusive": {"none": _exclusive(1.1), "fair": _exclusive(interactive_p99)},
            "policies": {"none": none or {}, "fair": fair, "fifo": fair}}


def _row(rows, scenario, target_start):
    found = [r for r in rows if r["scenario"] == scenario and r["target"].startswith(target_start)]
    assert len(found) == 1, (scenario, target_start, rows)
    return found[0]


def test_a_fair_run_that_meets_every_target_says_so_and_gives_no_reasons():
    run = {"two-1:1": {"share_error_1s": {"mean": 0.004, "p99": 0.011}, "jain": 0.9999,
                       "work_conservation": 0.985, "normalised_rates": {"a": 0.49, "b": 0.495}},
           "dynamics": {"share_error_1s": {"mean": 0.01, "p99": 0.03}, "jain": 0.998,
                        "work_conservation": 0.99, "normalised_rates": {"a": 0.5, "b": 0.49},
                        "convergence_s": [0.0, 0.3, 0.1]},
           "interactive+2": {"share_error_1s": {"mean": 0.0, "p99": 0.0}, "jain": 1.0,
                             "work_conservation": 0.981, "normalised_rates": {"a": 0.49, "b": 0.491},
                             "interactive_ms": {"p50": 0.8, "p99": 1.7, "p999": 2.5}}}
    rows = verdicts(_results(run), SCENARIOS)
    assert {r["policy"] for r in rows} == {"fair"}   # fifo and none have no targets
    assert all(r["met"] and r["by"] == 0.0 and r["why"] == "" for r in rows)
    assert len([r for r in rows if r["scenario"] == "dynamics" and "convergence" in r["target"]]) == 3
    assert "MISSED" not in targets_table(rows)


def test_a_split_off_its_weights_says_by_how_much_and_shows_the_arbiters_time_split_and_clock():
    run = {"big-vs-small": {
        "share_error_1s": {"mean": 0.079, "p99": 0.091}, "jain": 0.994,
        "work_conservation": 1.001, "normalised_rates": {"a": 0.54, "b": 0.461},
        # the pool split device time evenly; a big GEMM took 9 % less than alone, a small 5 % more
        "charged_s": {"a": 9.0, "b": 9.05},
        "charged_ms_per_gemm": {"a": 1e3 / BIG_RATE * 0.91, "b": 1e3 / SMALL_RATE * 1.05},
        "gpu_clock": {"sm_mhz": 1890.0}}}
    rows = verdicts(_results(run), SCENARIOS)
    mean = _row(rows, "big-vs-small", "share error 1 s, mean")
    assert not mean["met"] and mean["by"] == pytest.approx(0.059)
    assert not _row(rows, "big-vs-small", "share error 1 s, p99")["met"]
    assert _row(rows, "big-vs-small", "Jain")["met"]
    assert _row(rows, "big-vs-small", "work conservation")["met"]
    why = mean["why"]
    assert "within 0.3% of the weights (the arbiter split time by weight)" in why
    assert "a (big) -9.0%" in why and "b (small) +5.0%" in why
    assert "SM clock 1890 MHz in the mix, alone big 1440, small 1980 MHz" in why
    assert "MISSED by 0.059" in targets_table(rows)


def test_an_arbiter_whose_own_time_split_is_off_is_named_as_the_cause():
    run = {"three-1:2:4": {"share_error_1s": {"mean": 0.06, "p99": 0.2}, "jain": 0.97,
                           "work_conservation": 0.99,
                           "normalised_rates": {"a": 0.2, "b": 0.3, "c": 0.49},
                           "charged_s": {"a": 2.0, "b": 3.0, "c": 5.0}}}
    why = _row(verdicts(_results(run), SCENARIOS), "three-1:2:4", "Jain")["why"]
    assert "within 40.0% of the weights (the arbiter's own split is off)" in why


def test_under_share_the_workers_device_time_is_not_judged_as_the_arbiters_split():
    """Side by side, each worker's measured time holds the others' time slices."""
    run = {"three-1:2:4": {"share_error_1s": {"mean": 0.06, "p99": 0.2}, "jain": 0.97,
                           "work_conservation": 0.99,
                           "normalised_rates": {"a": 0.2, "b": 0.3, "c": 0.49},
                           "charged_s": {"a": 2.0, "b": 3.0, "c": 5.0}}}
    results = {"exclusive": {"none": _exclusive(1.1)}, "policies": {"none": {}, "share": run}}
    why = _row(verdicts(results, SCENARIOS), "three-1:2:4", "Jain")["why"]
    assert "arbiter" not in why


def test_lost_work_is_split_into_idle_device_time_slower_work_and_the_interactive_users_time():
    run = {"interactive+1": {
        "work_conservation": 0.93, "normalised_rates": {"a": 0.93},
        "busy": {"a": 0.95, "i": 0.03},   # 2 % of the time nobody was charged
        "interactive_ms": {"p50": 1.6, "p99": 2.6, "p999": 4.0},
        "arrivals": {"i": {"wants": 100, "free": 10, "preempted": 70, "waited": 20}}},
        "two-1:1": {"work_conservation": 0.96, "normalised_rates": {"a": 0.48, "b": 0.48},
                    "share_error_1s": {"mean": 0.001, "p99": 0.002}, "jain": 1.0,
                    "busy": {"a": 0.5, "b": 0.49}, "work_conservation_drift": 0.975}}
    none = {"interactive+1": {"interactive_ms": {"p50": 2.1, "p99": 5.5, "p999": 7.0}}}
    rows = verdicts(_results(run, none), SCENARIOS)
    assert not any(r["target"].startswith("share") for r in rows if r["scenario"] == "interactive+1")
    work = _row(rows, "interactive+1", "work conservation")
    assert not work["met"] and work["by"] == pytest.approx(0.05)
    assert "charged someone 98.0% of the time" in work["why"]
    assert "running nothing: 2.0%" in work["why"]
    assert "did 97.9% of alone's work per charged second" in work["why"]
    assert "i's own device time 3.0%" in work["why"]
    drift = _row(rows, "two-1:1", "work conservation")["why"]
    assert "0.975 against the rates alone before and after" in drift
    slow = _row(rows, "interactive+1", "interactive p99")
    assert not slow["met"] and slow["by"] == pytest.approx(0.6)
    assert "the op alone (fair's pool): p99 0.90 ms" in slow["why"]
    assert "(none) here: p99 5.50 ms" in slow["why"]
    assert "holder's launched big GEMM, 0.71 ms alone" in slow["why"]
    assert "the two together: 1.61 ms" in slow["why"]
    assert "10% free, 70% preempting, 20% waited" in slow["why"]


def test_an_op_already_over_the_target_alone_is_named_and_long_kernels_judged_as_issue_38s():
    run = {"interactive+2": {"work_conservation": 0.99, "normalised_rates": {"a": 0.5, "b": 0.49},
                             "share_error_1s": {"mean": 0.0, "p99": 0.0}, "jain": 1.0,
                             "interactive_ms": {"p50": 2.0, "p99": 4.0, "p999": 9.0}},
           "interactive+long": {"work_conservation": 0.99, "normalised_rates": {"a": 0.99},
                                "interactive_ms": {"p50": 8.0, "p99": 90.0, "p999": 100.0}}}
    rows = verdicts(_results(run, interactive_p99=3.2), SCENARIOS)
    why = _row(rows, "interactive+2", "interactive p99")["why"]
    assert "p99 3.20 ms (over the target before any other user)" in why
    beside_long = [r for r in rows if r["scenario"] == "interactive+long" and "interactive" in r["target"]]
    assert [r["target"] for r in beside_long] == ["(38) interactive p99 beside long, ms"]
    assert not beside_long[0]["met"] and beside_long[0]["by"] == pytest.approx(88.0)


def test_issue_38_long_beside_small_each_at_half_and_never_below_none():
    """Beside long kernels each user at 0.50 +- 0.05 of its rate alone; no user more than
    0.02 below its rate under none in the same run, unless it still has its fair share (the
    long user: 0.77 under none, 0.52 under fair, its share 0.5)."""
    run = {"long-vs-small": {"work_conservation": 0.96, "normalised_rates": {"a": 0.52, "b": 0.43},
                             "share_error_1s": {"mean": 0.04, "p99": 0.05}, "jain": 0.99}}
    none = {"long-vs-small": {"normalised_rates": {"a": 0.77, "b": 0.46}}}
    rows = verdicts(_results(run, none), SCENARIOS)
    a, b = _row(rows, "long-vs-small", "(38) a off"), _row(rows, "long-vs-small", "(38) b off")
    assert a["met"] and a["value"] == pytest.approx(0.02)
    assert not b["met"] and b["by"] == pytest.approx(0.02) and "normalised rate 0.430" in b["why"]
    below = _row(rows, "long-vs-small", "(38) b against none")
    assert not below["met"] and below["value"] == pytest.approx(-0.03) and below["by"] == pytest.approx(0.01)
    assert "0.430 under fair, 0.460 under none, its fair share 0.500" in below["why"]
    assert not [r for r in rows if r["target"] == "(38) a against none"]   # has its share
    # without none's figures, nothing to compare with
    assert not [r for r in verdicts(_results(run), SCENARIOS) if "against none" in r["target"]]


def test_a_change_that_never_settles_is_a_miss():
    run = {"dynamics": {"work_conservation": 0.99, "normalised_rates": {"a": 0.5, "b": 0.49},
                        "share_error_1s": {"mean": 0.0, "p99": 0.0}, "jain": 1.0,
                        "convergence_s": [0.2, None, 1.4]}}
    rows = [r for r in verdicts(_results(run), SCENARIOS) if "convergence" in r["target"]]
    assert [r["met"] for r in rows] == [True, False, False]
    assert "no three 100 ms windows" in rows[1]["why"]
    assert rows[2]["by"] == pytest.approx(0.4)


def test_busy_fractions_cover_exactly_the_span_of_each_sessions_lines(tmp_path):
    path = tmp_path / "usage.jsonl"
    with UsageLog(path) as log:
        log.open_session("s1", "a", "0", now=100.0)
        log.open_session("s2", "i", "0", now=100.2)
        for k, now in enumerate((100.5, 101.0, 101.5, 102.0), start=1):
            log.report("s1", "a", "0", {"device_s": 0.4 * k}, now=now)    # 80 % busy
        log.report("s2", "i", "0", {"device_s": 0.01}, now=101.2)          # once, late
        log.flush()
    # lines of s1 in the window: 101.0 and 101.5, covering 100.5-101.5; s2's one line covers
    # its span since opening (100.2-101.2): 1 % of it
    busy = busy_from_log(path, 100.6, 101.6)
    assert busy["a"] == pytest.approx(0.8)
    assert busy["i"] == pytest.approx(0.01)
    assert busy_from_log(path, 103.0, 104.0) == {}


def test_issue_51s_targets_are_judged_beside_none_in_the_same_call():
    fair = {"sync-1:1": {"work_conservation": 0.981, "normalised_rates": {"a": 0.49, "b": 0.49},
                         "share_error_1s": {"mean": 0.01, "p99": 0.03}, "jain": 0.999},
            "sync-long-vs-small": {"work_conservation": 0.884,
                                   "normalised_rates": {"a": 0.790, "b": 0.093},
                                   "share_error_1s": {"mean": 0.3, "p99": 0.4}, "jain": 0.7},
            "dl-mix": {"work_conservation": 1.089, "normalised_rates": {"a": 0.644, "b": 0.45},
                       "interactive_ms": {"p50": 2.0, "p99": 13.56, "p999": 20.0}}}
    none = {"sync-1:1": {"work_conservation": 0.975, "normalised_rates": {"a": 0.49, "b": 0.485}},
            "sync-long-vs-small": {"work_conservation": 1.010,
                                   "normalised_rates": {"a": 0.798, "b": 0.212}},
            "dl-mix": {"work_conservation": 1.134, "normalised_rates": {"a": 0.676, "b": 0.46},
                       "interactive_ms": {"p50": 1.0, "p99": 5.57, "p999": 9.0}}}
    rows = verdicts(_results(fair, none), SCENARIOS)
    one = _row(rows, "sync-1:1", "(51) work conservation")
    assert one["met"] and one["limit"] == pytest.approx(0.965)      # none's 0.975 less 0.01
    lvs = _row(rows, "sync-long-vs-small", "(51) work conservation")
    assert not lvs["met"] and lvs["by"] == pytest.approx(1.0 - 0.884)
    assert "0.884 under fair, 1.010 under none" in lvs["why"]
    small = _row(rows, "sync-long-vs-small", "(38) b off 0.50")
    assert not small["met"] and small["by"] == pytest.approx(0.5 - 0.093 - 0.05)
    assert not _row(rows, "sync-long-vs-small", "(38) b against none")["met"]
    trainer = _row(rows, "dl-mix", "(51) trainer a")
    assert trainer["met"] and trainer["value"] == 0.644
    tail = _row(rows, "dl-mix", "(51) interactive p99 over none's")
    assert not tail["met"] and tail["value"] == pytest.approx(13.56 / 5.57)
    assert "13.56 ms under fair, 5.57 ms under none" in tail["why"]
    assert "(51)" in targets_table(rows)


def test_a_trainer_is_held_to_dl_mixs_floor_only_in_dl_mix():
    """Issue 51's trainer floor (0.45 of its rate) is dl-mix's. In mixed-1:2:4 the trainer
    has weight 2 of 7: its share rules it (0.286), as any user's, and no trainer row is
    judged there (run 156 printed one there, MISSED, for a rate at its share)."""
    share = {"mixed-1:2:4": {"work_conservation": 1.05, "normalised_rates":
                             {"a": 0.165, "b": 0.334, "c": 0.545},
                             "share_error_1s": {"mean": 0.1, "p99": 0.15}, "jain": 0.99}}
    none = {"mixed-1:2:4": {"work_conservation": 1.05, "normalised_rates":
                            {"a": 0.33, "b": 0.39, "c": 0.33}}}
    rows = verdicts(_results(share, none), SCENARIOS)
    assert not [r for r in rows if r["scenario"] == "mixed-1:2:4" and "trainer" in r["target"]]


def test_a_lone_user_is_judged_against_its_own_rate_and_latency_under_none():
    """Issue 51: a user alone within 3 % of ``none`` (its rate, and the interactive op's
    p99), under every policy."""
    fair = {"alone-sync": {"work_conservation": 0.95, "normalised_rates": {"a": 0.95}},
            "alone-train": {"work_conservation": 0.99, "normalised_rates": {"a": 0.99}},
            "alone-interactive": {"interactive_ms": {"p50": 0.4, "p99": 1.2, "p999": 2.0}}}
    none = {"alone-sync": {"work_conservation": 1.0, "normalised_rates": {"a": 1.0}},
            "alone-train": {"work_conservation": 1.0, "normalised_rates": {"a": 1.0}},
            "alone-interactive": {"interactive_ms": {"p50": 0.4, "p99": 1.0, "p999": 2.0}}}
    rows = verdicts(_results(fair, none), SCENARIOS)
    sync = _row(rows, "alone-sync", "(51) alone a over none's")
    assert not sync["met"] and sync["by"] == pytest.approx(0.97 - 0.95)
    assert "0.950 under fair, 1.000 under none" in sync["why"]
    assert _row(rows, "alone-train", "(51) alone a over none's")["met"]
    tail = _row(rows, "alone-interactive", "(51) interactive p99 over none's")
    assert not tail["met"] and tail["value"] == pytest.approx(1.2)
    assert tail["limit"] == pytest.approx(1 / 0.97)


def test_a_scenario_whose_users_never_ran_together_gives_no_whole_run_figures():
    """A user whose client started after the lead ran out (an 8192² GEMM user began 3 s into
    a 4 s scenario on an H200, run 81): the window all users share is empty, and rates over
    it would be noise (a trainer at 0.002 of its rate). The scenario says why it is void; its
    verdicts judge nothing of it."""
    from fairness_report import analyse

    exclusive = {"big": {"rate": BIG_RATE}, "small": {"rate": SMALL_RATE}}
    start, stop = 100.0, 104.0
    steady = {"user": "a", "kind": "big", "points": [(start + t / 10, t * 140.0) for t in range(41)]}
    late = {"user": "b", "kind": "small", "points": [(start + 3.1 + t / 10, t * 1700.0) for t in range(10)]}
    out = analyse("long-vs-small", [steady, late], [(start, stop, {"a": 1, "b": 1})], exclusive,
                  start, stop)
    assert "b began 3.10 s into the 4.0 s scenario" in out["void"]
    assert out["normalised_rates"] == {} and out["work_conservation"] is None and out["jain"] is None
    rows = verdicts({"policies": {"share": {"long-vs-small": out}}}, SCENARIOS)
    assert rows == []
    together = analyse("long-vs-small", [steady, {**late, "points": [(start + 0.2 + t / 10, t * 1700.0)
                                                                    for t in range(39)]}],
                       [(start, stop, {"a": 1, "b": 1})], exclusive, start, stop)
    assert "void" not in together
    assert together["normalised_rates"]["a"] == pytest.approx(1.0, abs=0.01)
