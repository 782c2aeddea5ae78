"""The fairness benchmark's arithmetic and its outputs: windows, shares, errors, table, plot.

``benchmarks/fairness.py`` runs the clients and calls :func:`analyse` once per
scenario with the clients' results (fence timestamps and GEMM counts, or
interactive latencies), then :func:`table` and :func:`plot` over everything.
"""

from __future__ import annotations

import statistics

from fairness_scenarios import NOT_WORK   # (beside this file)


def cumulative(points, t):
    """Completed GEMMs by time *t*, interpolated between fences."""
    if t <= points[0][0]:
        return 0.0
    for (t0, c0), (t1, c1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1
    return float(points[-1][1])


def _client_side(figures: dict | None) -> str:
    """The client's side of an interactive user's replays (kernelproxy's figures): held
    stretches let go by its timing, replays re-run paced or not through graphs."""
    if not figures:
        return ""
    return (f"; the client: {figures.get('replays')} replays, {figures.get('released')} "
            f"stretches let go, {figures.get('paced')} paced, {figures.get('not_graphed')} "
            f"not graphed")


def _rates(result, exclusive, t0, t1, window):
    rate = exclusive[result["kind"]]["rate"]
    edges = [t0 + i * window for i in range(int((t1 - t0) / window + 1e-9) + 1)]
    return [(cumulative(result["points"], b) - cumulative(result["points"], a)) / window / rate
            for a, b in zip(edges, edges[1:])]


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def normalising_rates(exclusive: dict, policy: str) -> dict:
    """The rates alone that normalise *policy*'s scenarios (*exclusive*: per calibrated
    policy). Those measured without an arbiter (``none``), so that a policy that slows a
    lone user shows as lost work, not as a new normal; else the policy's own, else the
    first measured. Plain CuPy processes (``local``) by their own."""
    if policy == "local" and policy in exclusive:
        return exclusive[policy]
    return exclusive.get("none") or exclusive.get(policy) or next(iter(exclusive.values()), {})


#: The least time (seconds) every user of a scenario's first phase must have run together,
#: after the settle, for its whole-run figures: a client whose start outlasted the lead can
#: leave no common window at all (an 8192² GEMM user began 3 s into a 4 s scenario on an
#: H200, run 81), and rates over an empty one are noise (a trainer at 0.002 of its rate
#: whose own 100 ms series ran at 0.5-0.6 throughout). One 100 ms window at least.
MIN_COMMON = 0.1


def _running_from(gemm, targets, p0):
    """When every user of a phase is running: a client whose warm-up outlasted the lead
    starts its loop late, and windows before that would count it as starved."""
    return max([p0] + [gemm[u]["points"][0][0] for u in targets])


def analyse(name, results, phases, exclusive, start, stop) -> dict:
    gemm = {r["user"]: r for r in results if r["kind"] not in NOT_WORK}
    out: dict = {"scenario": name}
    errors = {w: [] for w in (0.1, 1.0, 10.0)}
    series = {}
    for p0, p1, targets in phases:
        if not targets:   # (the interactive user alone: latency only)
            continue
        # skip the first moments of a phase (clients ramping up; the dynamics report their
        # convergence separately)
        settle = min(0.5 if name == "dynamics" else 1.0, (p1 - p0) / 4)
        t0 = _running_from(gemm, targets, p0) + settle
        total_w = sum(targets.values())
        for window in errors:
            if p1 - t0 < window:
                continue
            norm = {u: _rates(gemm[u], exclusive, t0, p1, window) for u in targets}
            for i in range(len(next(iter(norm.values())))):
                total = sum(norm[u][i] for u in targets)
                if total <= 0:
                    continue
                for u, w in targets.items():
                    share = norm[u][i] / total
                    errors[window].append(abs(share - w / total_w) / (w / total_w))
    for window, errs in errors.items():
        key = {0.1: "100ms", 1.0: "1s", 10.0: "10s"}[window]
        out[f"share_error_{key}"] = ({"mean": statistics.mean(errs), "p99": percentile(errs, 0.99)}
                                     if errs else None)
    # whole-run figures over the first (longest steady) phase
    p0, p1, targets = phases[0]
    norm = {}
    if targets:
        t0 = _running_from(gemm, targets, p0) + min(1.0, (p1 - p0) / 4)
        if p1 - t0 >= MIN_COMMON:
            norm = {u: _rates(gemm[u], exclusive, t0, p1, p1 - t0)[0] for u in targets}
        else:   # (no figures rather than figures over nothing)
            late = max(targets, key=lambda u: gemm[u]["points"][0][0])
            out["void"] = (f"its users ran together {max(0.0, p1 - t0):.2f} s after the settle, "
                           f"under {MIN_COMMON} s: {late} began "
                           f"{gemm[late]['points'][0][0] - p0:.2f} s into the "
                           f"{p1 - p0:.1f} s scenario (raise --lead or --seconds)")
    total = sum(norm.values())
    total_w = sum(targets.values())
    x = [(norm[u] / total) / (w / total_w) for u, w in targets.items()] if total else []
    out["normalised_rates"] = norm
    out["jain"] = (sum(x) ** 2 / (len(x) * sum(v * v for v in x))) if x else None
    out["work_conservation"] = total if targets and norm else None
    for r in results:
        if r["kind"] == "interactive":
            lat = [v * 1e3 for t, v in zip(r["issued"], r["latencies"]) if t >= start + 1.0]
            out["interactive_ms"] = {"p50": percentile(lat, 0.5), "p99": percentile(lat, 0.99),
                                     "p999": percentile(lat, 0.999), "n": len(lat)}
    if name == "dynamics":
        out["convergence_s"] = []
        for p0, p1, targets in phases[1:]:
            total_w = sum(targets.values())
            norm = {u: _rates(gemm[u], exclusive, p0, p1, 0.1) for u in targets}
            ok_run, found = 0, None
            for i in range(len(next(iter(norm.values())))):
                total = sum(norm[u][i] for u in targets)
                good = total > 0 and all(
                    abs(norm[u][i] / total - w / total_w) / (w / total_w) <= 0.10
                    for u, w in targets.items())
                ok_run = ok_run + 1 if good else 0
                if ok_run == 3:
                    found = (i - 2) * 0.1
                    break
            out["convergence_s"].append(found)
    # shares every 100 ms for the plot
    for u, r in gemm.items():
        series[u] = _rates(r, exclusive, start, stop, 0.1)
    out["series_100ms"] = series
    return out


def table(results: dict) -> str:
    lines = [f"{'scenario':14} {'policy':8} {'err100ms':>9} {'err1s':>7} {'p99 1s':>7} {'err10s':>7} "
             f"{'jain':>6} {'work':>6} {'int p50':>8} {'int p99':>8} {'p99.9':>7} {'conv s':>10}",
             "-" * 112]
    fmt = lambda v, f="{:.3f}": "-" if v is None else f.format(v)  # noqa: E731
    for name in results["scenarios"]:
        for policy, by in results["policies"].items():
            r = by.get(name)
            if r is None:
                continue
            e = lambda k, q: fmt((r.get(k) or {}).get(q))  # noqa: E731
            it = r.get("interactive_ms") or {}
            conv = ",".join(fmt(v, "{:.1f}") for v in r.get("convergence_s", [])) or "-"
            lines.append(f"{name:14} {policy:8} {e('share_error_100ms', 'mean'):>9} "
                         f"{e('share_error_1s', 'mean'):>7} {e('share_error_1s', 'p99'):>7} "
                         f"{e('share_error_10s', 'mean'):>7} {fmt(r['jain']):>6} "
                         f"{fmt(r['work_conservation']):>6} {fmt(it.get('p50'), '{:.2f}'):>8} "
                         f"{fmt(it.get('p99'), '{:.2f}'):>8} {fmt(it.get('p999'), '{:.2f}'):>7} {conv:>10}")
    for name in results["scenarios"]:   # how the interactive user's requests were answered
        for policy, by in results["policies"].items():
            for user, st in ((by.get(name) or {}).get("stretches") or {}).items():
                lines.append(f"{name} {policy}: {user}'s replays {st.get('replays')}, answered from a "
                             f"run ahead {st.get('ahead')}, its read made at once {st.get('ahead_read')}, "
                             f"missed {st.get('ahead_missed')}" + _client_side(st.get("client")))
    for policy, after in (results.get("exclusive_after") or {}).items():
        before = normalising_rates(results["exclusive"], policy)
        drift = ", ".join(f"{kind} {after[kind]['rate'] / before[kind]['rate']:.3f}"
                          for kind in after if kind in before and "rate" in after[kind])
        corrected = ", ".join(f"{name} {fmt(r.get('work_conservation_drift'))}"
                              for name, r in results["policies"].get(policy, {}).items())
        lines.append(f"{policy}: rate alone after its scenarios / before: {drift}; "
                     f"work conservation against their mean: {corrected}")
    for policy, ex in results["exclusive"].items():
        it = ex.get("interactive", {})
        long = f", long {ex['long']['rate']:.1f} GEMM/s" if "long" in ex else ""
        lines.append(f"alone ({policy}): big {ex['big']['rate']:.0f} GEMM/s, small "
                     f"{ex['small']['rate']:.0f} GEMM/s{long}, interactive p50 {fmt(it.get('p50'), '{:.2f}')} "
                     f"p99 {fmt(it.get('p99'), '{:.2f}')} p99.9 {fmt(it.get('p999'), '{:.2f}')} ms")
    return "\n".join(lines)


def plot(results: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = results["scenarios"]
    policies = list(results["policies"])
    fig, axes = plt.subplots(len(names), len(policies), figsize=(4.2 * len(policies), 2.2 * len(names)),
                             sharex=True, sharey=True, squeeze=False)
    for i, name in enumerate(names):
        for j, policy in enumerate(policies):
            ax = axes[i][j]
            r = results["policies"][policy].get(name)
            if r:
                series = r["series_100ms"]
                totals = [sum(v) for v in zip(*series.values())]
                for user, values in sorted(series.items()):
                    shares = [v / t if t else 0 for v, t in zip(values, totals)]
                    ax.plot([k * 0.1 for k in range(len(shares))], shares, lw=0.8, label=user)
            ax.set_ylim(0, 1)
            if i == 0:
                ax.set_title(policy)
            if j == 0:
                ax.set_ylabel(name, fontsize=8)
            if i == 0 and j == len(policies) - 1:
                ax.legend(fontsize=7, loc="upper right")
    fig.supxlabel("seconds (shares of normalised rate, 100 ms windows)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


