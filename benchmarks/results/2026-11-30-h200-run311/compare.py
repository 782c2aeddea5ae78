import json, statistics
R = {k: {p["program"]: p for p in json.load(open(f"benchmarks/results/2026-11-30-h200-run311/u-{k}.json"))["programs"]} for k in ("1-0","2-1","3-1","4-0")}
names = list(R["1-0"])
print(f"{'program':32s} {'campaign':16s} off1   on1   on2  off2   msgs/it off→on  replays off→on")
rows = []
for n in names:
    r = [R[k][n]["ratio"] for k in ("1-0","2-1","3-1","4-0")]
    m = [R[k][n].get("messages_an_iteration") for k in ("1-0","2-1")]
    rp = [R[k][n]["served"]["replays"] for k in ("1-0","2-1")]
    rows.append((n, r))
    print(f"{n:32s} {R['1-0'][n]['campaign']:16s} " + " ".join(f"{x:5.2f}" for x in r) + f"   {m[0]:.2f}→{m[1]:.2f}   {rp[0]}→{rp[1]}")
off = [statistics.mean([r[0], r[3]]) for _, r in rows]; on = [statistics.mean([r[1], r[2]]) for _, r in rows]
print("median off", round(statistics.median([r[0] for _,r in rows]),2), round(statistics.median([r[3] for _,r in rows]),2), "on", round(statistics.median([r[1] for _,r in rows]),2), round(statistics.median([r[2] for _,r in rows]),2))
import math
g = lambda xs: math.exp(sum(map(math.log, xs))/len(xs))
print("geomean off", round(g([r[0] for _,r in rows]),3), round(g([r[3] for _,r in rows]),3), "on", round(g([r[1] for _,r in rows]),3), round(g([r[2] for _,r in rows]),3))
better = sum(1 for o, n_ in zip(off, on) if n_ < o*0.9); worse = sum(1 for o, n_ in zip(off, on) if n_ > o*1.1)
print("faster by >10%:", better, " slower by >10%:", worse)
