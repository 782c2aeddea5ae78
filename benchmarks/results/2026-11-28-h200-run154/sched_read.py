"""Run 154's diagnostic reader: the worker's reply sends (sched_patch.py's send-*.txt) matched
with the client's next read (recv-*.txt) after each: how long a send took, whether the client
read its reply on the CPU the worker sent from, and whether the worker was moved meanwhile.
    python sched_read.py DIR"""
import bisect
import glob
import sys


def stats(values):
    if not values:
        return "none"
    v = sorted(values)
    n = len(v)
    return (f"n {n} mean {sum(v) / n:.1f} p50 {v[n // 2]:.1f} p90 {v[n * 9 // 10]:.1f} "
            f"p99 {v[min(n - 1, n * 99 // 100)]:.1f} max {v[-1]:.1f}")


d = sys.argv[1]
sends = [tuple(float(x) for x in line.split()) for f in glob.glob(f"{d}/send-*.txt") for line in open(f)]
recvs = sorted(tuple(float(x) for x in line.split()) for f in glob.glob(f"{d}/recv-*.txt") for line in open(f))
times = [r[0] for r in recvs]
same, other, moved = [], [], 0
lag_same, lag_other = [], []
for t0, dur, n, c0, c1 in sends:
    moved += c0 != c1
    i = bisect.bisect_left(times, t0)
    if i == len(times) or times[i] - t0 > 0.005:
        continue
    lag = (times[i] - t0) * 1e6
    if recvs[i][1] == c0:
        same.append(dur); lag_same.append(lag)
    else:
        other.append(dur); lag_other.append(lag)
print(f"{d}: {len(sends)} sends, {len(recvs)} client reads; worker moved during a send {moved}")
print(f"  all sends, us:            {stats([s[1] for s in sends])}")
print(f"  client read on the worker's CPU: send {stats(same)}; send-to-read {stats(lag_same)}")
print(f"  client read on another CPU:      send {stats(other)}; send-to-read {stats(lag_other)}")
print(f"  worker CPUs {sorted(set(int(s[3]) for s in sends))[:16]}  client CPUs {sorted(set(int(r[1]) for r in recvs))[:16]}")
