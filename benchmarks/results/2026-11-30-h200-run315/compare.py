"""Run 315's tables from its JSON: each loop's time over local CuPy's in each call (cut:
GPUWB_SEVERAL_JOIN=0, join: the default), messages an iteration, and joined against cut.
    python benchmarks/results/2026-11-30-h200-run315/compare.py"""
import json, statistics, math, sys
base = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/2026-11-30-h200-run315"
calls = ["1-cut", "2-join", "3-join", "4-cut"]
R = {k: {p["program"]: p for p in json.load(open(f"{base}/u-{k}.json"))["programs"]} for k in calls}
names = list(R[calls[0]])
print(f"{'program':32s} " + " ".join(f"{c:>6s}" for c in calls) + "  msgs/it cut→join")
cols = {c: [] for c in calls}
for n in names:
    r = [R[c][n]["ratio"] for c in calls]
    for c, x in zip(calls, r):
        cols[c].append(x)
    print(f"{n:32s} " + " ".join(f"{x:6.2f}" for x in r) + f"  {R['1-cut'][n]['messages_an_iteration']:.2f}→{R['2-join'][n]['messages_an_iteration']:.2f}")
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print("median  " + " ".join(f"{c}:{statistics.median(cols[c]):.2f}" for c in calls))
print("geomean " + " ".join(f"{c}:{gm(cols[c]):.3f}" for c in calls))
cut = [statistics.mean(p) for p in zip(cols["1-cut"], cols["4-cut"])]
join = [statistics.mean(p) for p in zip(cols["2-join"], cols["3-join"])]
print(f"join vs cut: faster by >10% {sum(1 for a, b in zip(cut, join) if b < 0.9 * a)}, slower by >10% {sum(1 for a, b in zip(cut, join) if b > 1.1 * a)}, geomean ratio {gm([b / a for a, b in zip(cut, join)]):.3f}")
