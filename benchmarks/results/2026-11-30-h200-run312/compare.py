import json, statistics, math, sys
base = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/2026-11-30-h200-run312"
calls = ["1-off", "2-p1", "3-p2", "4-p2", "5-p1", "6-off"]
R = {k: {p["program"]: p for p in json.load(open(f"{base}/u-{k}.json"))["programs"]} for k in calls}
names = list(R[calls[0]])
print(f"{'program':32s} {'campaign':16s} " + " ".join(f"{c:>6s}" for c in calls) + "  graphed off/p1/p2")
cols = {c: [] for c in calls}
for n in names:
    r = [R[c][n]["ratio"] for c in calls]
    for c, x in zip(calls, r):
        cols[c].append(x)
    g = [R[c][n]["served"]["graphed"] for c in ("1-off", "2-p1", "3-p2")]
    print(f"{n:32s} {R[calls[0]][n]['campaign']:16s} " + " ".join(f"{x:6.2f}" for x in r) + f"  {g[0]}/{g[1]}/{g[2]}")
gm = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print("median  " + " ".join(f"{c}:{statistics.median(cols[c]):.2f}" for c in calls))
print("geomean " + " ".join(f"{c}:{gm(cols[c]):.3f}" for c in calls))
side = lambda a, b: [statistics.mean(p) for p in zip(cols[a], cols[b])]
off, p1, p2 = side("1-off", "6-off"), side("2-p1", "5-p1"), side("3-p2", "4-p2")
for name, x in (("p2 vs off", zip(off, p2)), ("p2 vs p1", zip(p1, p2)), ("p1 vs off", zip(off, p1))):
    x = list(x)
    print(f"{name}: faster by >10% {sum(1 for a, b in x if b < 0.9 * a)}, slower by >10% {sum(1 for a, b in x if b > 1.1 * a)}, geomean ratio {gm([b / a for a, b in x]):.3f}")
