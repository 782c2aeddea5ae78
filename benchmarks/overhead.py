"""Proxy overhead vs local CuPy, side by side in one run on one machine.

    python benchmarks/overhead.py [--devices auto] [--json out.json] [--quick]

Starts an embedded pool (the front door in this process, the session workers
in their own processes), or with ``--served`` a pool in a process of its own
(``gpuwb-backend serve``, as deployed), opens one session per transport
(``--transports ipc,tcp``: the same-host link and loopback TCP), then measures
each case on local CuPy and through each session, in turn, on the same GPU:

* sync latency of a small op, ``float((x + 1).sum())`` with 1 K float32, hot
  and after 10 ms idle
* pipelined small-op rate, ``x = x + 1`` x 20 000 then a sync
* GEMM 8192 x 8192, float16 and float32 (TFLOP/s)
* 256 MB host->device and device->host (GB/s)
* each transport's raw floor (``raw_transport.py``): a large message each way
  and a small round trip, hot and after idle
* with ``--compare-policies``: the sync latency and pipelined rate of one lone
  session under each arbiter policy (``none``, ``fair`` and ``share`` pools side by side,
  each ``gpuwb-backend serve`` in its own process, measured in alternating
  rounds): the arbiter must cost a lone user nothing

With no GPU (or no CuPy) the local column is empty and the pool runs on the
NumPy device, which still exercises the whole proxy path.
Prints a table, then one JSON object (also written to --json).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernelproxy  # noqa: E402
from json_out import emit  # noqa: E402  (beside this file)
from raw_transport import bench_raw, bench_staging_floor  # noqa: E402
from served_pool import ServedPool, open_pool, sessions_by_transport, use_side  # noqa: E402
from kernelproxy.modules import module_for  # noqa: E402

MB = 1 << 20


def local_cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # no CuPy or no GPU here
        return None


def sync_of(xp, session):
    if session is not None:
        return lambda: session.sync(device=True)
    return lambda: xp.cuda.get_current_stream().synchronize()


# ------------------------------------------------------------------ cases

def bench_sync_latency(xp, session, reps):
    x = xp.arange(1024, dtype=xp.float32)
    for _ in range(50):
        float((x + 1).sum())
    times = []
    worker_before = session.worker_seconds if session is not None else 0.0
    for _ in range(reps):
        t0 = time.perf_counter()
        float((x + 1).sum())
        times.append(time.perf_counter() - t0)
    result = {"median_us": statistics.median(times) * 1e6, "p90_us": sorted(times)[int(reps * 0.9)] * 1e6}
    if session is not None:  # how much of it the worker itself spent (decode, run, encode)
        result["worker_us"] = (session.worker_seconds - worker_before) / reps * 1e6
    return result


def bench_sync_after_idle(xp, session, reps, idle=0.010):
    """The same small sync op, each after *idle* seconds of nothing (a person at a
    notebook): what wakes up slowly (sleeping threads, polls, the GPU) shows here.
    The slowest samples are listed with when they came and how much of them this
    process's garbage collector took, to tell a periodic stall from a collection."""
    x = xp.arange(1024, dtype=xp.float32)
    for _ in range(20):
        float((x + 1).sum())
    times, gc_in, starts = [], [], []
    collecting = [0.0, 0.0]   # start of the running collection, collector time this sample

    def note_gc(phase, info):
        if phase == "start":
            collecting[0] = time.perf_counter()
        else:
            collecting[1] += time.perf_counter() - collecting[0]

    gc.callbacks.append(note_gc)
    began = time.perf_counter()
    try:
        for _ in range(reps):
            time.sleep(idle)
            collecting[1] = 0.0
            t0 = time.perf_counter()
            float((x + 1).sum())
            times.append(time.perf_counter() - t0)
            gc_in.append(collecting[1])
            starts.append(t0 - began)
    finally:
        gc.callbacks.remove(note_gc)
    order = sorted(range(len(times)), key=times.__getitem__)
    ranked = [times[i] for i in order]
    slowest = [{"at_s": round(starts[i], 3), "us": round(times[i] * 1e6, 1),
                "gc_us": round(gc_in[i] * 1e6, 1)} for i in reversed(order[-5:])]
    return {"median_us": ranked[len(ranked) // 2] * 1e6, "p99_us": ranked[int(len(ranked) * 0.99)] * 1e6,
            "idle_ms": idle * 1e3, "seconds": time.perf_counter() - began, "slowest": slowest}


def bench_pipelined(xp, session, n):
    sync = sync_of(xp, session)
    x = xp.zeros(1024, dtype=xp.float32)
    for _ in range(200):
        x = x + 1
    sync()
    best = None
    for _ in range(3):
        x = xp.zeros(1024, dtype=xp.float32)
        sync()
        worked = session.worker_seconds if session is not None else 0.0
        t0 = time.perf_counter()
        for _ in range(n):
            x = x + 1
        issued = time.perf_counter() - t0
        sync()
        dt = time.perf_counter() - t0
        if best is None or dt < best[0]:
            worked = session.worker_seconds - worked if session is not None else None
            best = (dt, issued, worked)
    assert float(x[0]) == n
    dt, issued, worked = best
    # Which side sets the rate: the client's issuing (this process's Python per op, or
    # local CuPy's launch) or, for the proxy, the worker's time on its batches.
    return {"ops_per_s": n / dt, "us_per_op": dt / n * 1e6, "issue_us_per_op": issued / n * 1e6,
            "worker_us_per_op": None if worked is None else worked / n * 1e6}


def bench_gemm(xp, session, n, dtype, reps):
    sync = sync_of(xp, session)
    a = xp.random.rand(n, n).astype(dtype)
    b = xp.random.rand(n, n).astype(dtype)
    c = a @ b
    sync()
    for _ in range(3):
        c = a @ b
    sync()
    t0 = time.perf_counter()
    for _ in range(reps):
        c = a @ b
    sync()
    dt = (time.perf_counter() - t0) / reps
    del c
    return {"ms": dt * 1e3, "tflops": 2 * n ** 3 / dt / 1e12}


def bench_transfers(xp, session, nbytes, reps):
    sync = sync_of(xp, session)
    host = np.random.default_rng(0).random(nbytes // 8)
    dev = xp.asarray(host)
    sync()
    h2d = []
    for _ in range(reps):
        t0 = time.perf_counter()
        dev = xp.asarray(host)
        sync()
        h2d.append(time.perf_counter() - t0)
    d2h = []
    for _ in range(reps):
        t0 = time.perf_counter()
        back = dev.get()
        d2h.append(time.perf_counter() - t0)
    assert back[123] == host[123] and back.shape == host.shape
    return {"h2d_GBps": nbytes / min(h2d) / 1e9, "d2h_GBps": nbytes / min(d2h) / 1e9}


# ------------------------------------------------------------------ driver

def run_cases(sides, args):
    """Each case on every side in turn (local CuPy, then the proxy over each transport),
    back to back on the same GPU. *sides*: [(name, xp, session or None)]; returns
    {name: {case: result}}."""
    out = {name: {} for name, _xp, _s in sides}

    def xp_of(side, xp, sess):
        # the proxy module works on the *active* session: make this side's session active
        use_side(side, sess)
        return module_for(sess) if sess is not None else xp

    def each(name, fn, *rest):
        for side, xp, sess in sides:
            out[side][name] = fn(xp_of(side, xp, sess), sess, *rest)

    def abba(name, fn, *rest, key):
        """Local, proxy, proxy, local, ... and the mean of each side: GPU clocks drift as it
        warms (fp16 GEMM loses several percent over a run), and ABBA cancels a linear drift."""
        order = [side for side in sides] + [side for side in reversed(sides)]
        runs = {side[0]: [] for side in sides}
        for side, xp, sess in order * 2:
            runs[side].append(fn(xp_of(side, xp, sess), sess, *rest))
        for side, results in runs.items():
            values = [r[key] for r in results]
            out[side][name] = {**results[-1], key: statistics.mean(values), f"{key}_each": values}

    if args.only != "pipelined":
        each("sync_small_op", bench_sync_latency, args.latency_reps)
        if args.only != "latency" and args.idle_reps:
            each("sync_after_idle", bench_sync_after_idle, args.idle_reps)
    if args.only == "latency":
        return out
    each("pipelined_small_ops", bench_pipelined, args.pipelined_ops)
    if args.only == "pipelined":
        return out
    if args.gemm:
        for name, dtype in (("gemm_float16", np.float16), ("gemm_float32", np.float32)):
            abba(name, bench_gemm, args.gemm, dtype, args.gemm_reps, key="tflops")
    each("transfer_256MB", bench_transfers, args.transfer_mb * MB, args.transfer_reps)
    return out


def compare_policies(args, policies=("none", "fair", "share"), rounds=60, block=50):
    """One lone session per policy's pool, all pools up at once. The hot sync latency in
    blocks of *block* ops, one block on each pool in turn (A B B A ...), paired block by
    block, so the host's drift hits both alike; the same op interleaved one by one across
    the pools (each pool's worker then idles while the other runs: a short-idle wake-up,
    not the hot path); the pipelined rate in alternating short rounds. Medians per policy,
    and each policy's median of paired ratios to the first."""
    pools, sessions = {}, {}
    try:
        for policy in policies:
            pools[policy] = ServedPool(policy, args.devices, memory_limit=8 << 30)
            sessions[policy] = kernelproxy.connect(pools[policy].address, pools[policy].token)
        xs = {}
        for policy in policies:
            xp = module_for(sessions[policy])
            xs[policy] = xp.arange(1024, dtype=xp.float32)
            for _ in range(100):
                float((xs[policy] + 1).sum())

        def timed(policy):
            x = xs[policy]
            t0 = time.perf_counter()
            float((x + 1).sum())
            return time.perf_counter() - t0

        blocks = {p: [] for p in policies}        # median of each hot block
        samples = {p: [] for p in policies}       # every hot sample
        worker = {p: 0.0 for p in policies}
        for i in range(max(2, args.latency_reps // block)):
            for policy in (policies if i % 2 == 0 else tuple(reversed(policies))):
                before = sessions[policy].worker_seconds
                times = [timed(policy) for _ in range(block)]
                worker[policy] += sessions[policy].worker_seconds - before
                samples[policy] += times
                blocks[policy].append(statistics.median(times))
        interleaved = {p: [] for p in policies}
        for i in range(args.latency_reps):
            for policy in (policies if i % 2 == 0 else tuple(reversed(policies))):
                interleaved[policy].append(timed(policy))
        rates = {p: [] for p in policies}
        for r in range(rounds):
            for policy in (policies if r % 2 == 0 else tuple(reversed(policies))):
                rates[policy].append(bench_pipelined(module_for(sessions[policy]), sessions[policy],
                                                     max(1000, args.pipelined_ops // 20))["ops_per_s"])
    finally:
        for session in sessions.values():
            session.close()
        for pool in pools.values():
            pool.stop()
    out = {p: {"sync_us": statistics.median(samples[p]) * 1e6,
               "sync_p90_us": sorted(samples[p])[int(len(samples[p]) * 0.9)] * 1e6,
               "sync_worker_us": worker[p] / len(samples[p]) * 1e6,
               "sync_interleaved_us": statistics.median(interleaved[p]) * 1e6,
               "ops_per_s": statistics.median(rates[p]), "rate_rounds": rates[p]}
           for p in policies}
    # Ratios of paired samples (the same block, rep or round), then their median: a host
    # whose speed drifts between rounds (an H100 host of 2026-11-23 went between 35 k and
    # 55 k op/s every few seconds) moves both sides of a pair alike, where a ratio of the
    # two medians picks up whichever side caught more slow rounds.
    first = policies[0]
    base = out[first]
    paired = lambda a, b: statistics.median(x / y for x, y in zip(a, b))  # noqa: E731
    quartiles = lambda a, b: statistics.quantiles([x / y for x, y in zip(a, b)], n=4)[::2]  # noqa: E731
    for p in policies[1:]:
        out[p]["sync_vs_" + first] = paired(blocks[p], blocks[first])
        out[p]["sync_interleaved_vs_" + first] = paired(interleaved[p], interleaved[first])
        out[p]["rate_vs_" + first] = paired(rates[p], rates[first])
        # how far the pairs spread (the host's drift within a pair): a median within 5 %
        # means little when the quartiles are 20 % apart
        out[p]["sync_vs_" + first + "_quartiles"] = quartiles(blocks[p], blocks[first])
        out[p]["rate_vs_" + first + "_quartiles"] = quartiles(rates[p], rates[first])
        out[p]["sync_medians_vs_" + first] = out[p]["sync_us"] / base["sync_us"]
        out[p]["rate_medians_vs_" + first] = out[p]["ops_per_s"] / base["ops_per_s"]
    return out


def policy_table(compared):
    lines = [f"{'policy':8} {'sync µs':>9} {'worker µs':>10} {'interleaved':>12} {'op/s':>8} "
             f"{'sync':>7} {'interl.':>8} {'rate':>7}  vs none: medians of paired ratios, target "
             f"sync and rate within 5%", "-" * 110]
    for policy, row in compared.items():
        vs = lambda k: f"{row[k]:.3f}" if k in row else "-"  # noqa: E731
        lines.append(f"{policy:8} {row['sync_us']:9.1f} {row.get('sync_worker_us', 0):10.1f} "
                     f"{row.get('sync_interleaved_us', 0):12.1f} {row['ops_per_s']:8.0f} "
                     f"{vs('sync_vs_none'):>7} {vs('sync_interleaved_vs_none'):>8} "
                     f"{vs('rate_vs_none'):>7}")
    for policy, row in compared.items():
        if "rate_vs_none_quartiles" in row:
            (s1, s3), (r1, r3) = row["sync_vs_none_quartiles"], row["rate_vs_none_quartiles"]
            lines.append(f"{policy}: paired ratios' quartiles, sync {s1:.3f}-{s3:.3f}, rate {r1:.3f}-{r3:.3f}")
    return "\n".join(lines)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def table(results):
    """One row per case: local, then the proxy over each transport with its ratio."""
    local = results["local"]
    transports = [t for t in results.get("transports") or ("ipc", "tcp") if results.get(f"proxy_{t}")]
    # a held-ops session ("ipc-held") has its transport's raw floor
    raw = {t: results["raw_zmq"][t.partition("-")[0]] for t in transports
           if t.partition("-")[0] in results.get("raw_zmq", {})}

    def get(d, *path):
        for p in path:
            if d is None or p not in d:
                return None
            d = d[p]
        return d

    # a same-host session's large transfers go through its staging ring (unless "ipc-socket"):
    # their floor is the host's copy into and out of shared memory, not the socket's
    floor = {t: results["staging_floor"] if get(results, f"proxy_{t}", "staged") and results.get("staging_floor")
             else raw.get(t) for t in transports}

    def fmt(v, width=11):
        return f"{'-':>{width}}" if v is None else (f"{v:{width}.1f}" if v >= 10 else f"{v:{width}.3f}")

    head = f"{'case':26} {'local':>11}" + "".join(f" {'proxy ' + t:>11} {'ratio':>7}" for t in transports)
    zipc = results.get("raw_zmq_ipc")
    lines = [head + "  target", "-" * len(head + "  target" + " " * 30)]

    def row(name, path, unit, target, ref=None):
        cells = f"{name:26} {fmt(get(local, *path))}"
        for t in transports:
            pv = get(results[f"proxy_{t}"], *path)
            base = ref(t) if ref is not None else get(local, *path)
            cells += f" {fmt(pv)} {fmt(ratio(pv, base), 7)}"
        lines.append(f"{cells}  {unit:8} {target}")

    row("sync small op (hot)", ("sync_small_op", "median_us"), "us",
        "<= raw RTT + local + 20 us; <= 2.5x local (tcp)")
    row("sync after 10 ms idle p50", ("sync_after_idle", "median_us"), "us", "<= 2x local")
    row("sync after 10 ms idle p99", ("sync_after_idle", "p99_us"), "us", "<= 3x local")
    row("pipelined x = x + 1", ("pipelined_small_ops", "ops_per_s"), "op/s", ">= 0.8x local")
    row("  issuing it (client)", ("pipelined_small_ops", "issue_us_per_op"), "us/op", "(which side")
    row("  worker's time on it", ("pipelined_small_ops", "worker_us_per_op"), "us/op", " sets the rate)")
    if get(results, f"proxy_{transports[0]}", "gemm_float16") if transports else None:
        row("GEMM fp16", ("gemm_float16", "tflops"), "TFLOP/s", ">= 0.97x local")
        row("GEMM fp32", ("gemm_float32", "tflops"), "TFLOP/s", ">= 0.97x local")
    mb = results.get("transfer_mb", 256)
    row(f"H2D {mb} MB vs local", ("transfer_256MB", "h2d_GBps"), "GB/s", ">= 0.5x local pageable (ipc)")
    row(f"D2H {mb} MB vs local", ("transfer_256MB", "d2h_GBps"), "GB/s", ">= 0.5x local pageable (ipc)")
    row(f"H2D {mb} MB vs raw", ("transfer_256MB", "h2d_GBps"), "GB/s", ">= 0.9x best raw, same transport",
        ref=lambda t: floor[t]["send_GBps"] if floor.get(t) else None)
    row(f"D2H {mb} MB vs raw", ("transfer_256MB", "d2h_GBps"), "GB/s", ">= 0.9x best raw, same transport",
        ref=lambda t: floor[t]["recv_GBps"] if floor.get(t) else None)
    shared = results.get("staging_floor")
    if shared:
        lines.append(f"raw shared memory (the staged transfers' host copies, one process): into slots "
                     f"{shared['send_GBps']:.2f} GB/s, out into a fresh array {shared['recv_GBps']:.2f} GB/s")
    for t in transports:
        r = raw.get(t)
        if r is None:
            continue
        lines.append(f"raw {'unix socket' if r['transport'] == 'unix' else 'pyzmq ' + t}: 1 msg s/r {r['one_message_GBps']['send']:.2f}/"
                     f"{r['one_message_GBps']['recv']:.2f} GB/s, 8 MB msgs s/r "
                     f"{r['8MB_messages_GBps']['send']:.2f}/{r['8MB_messages_GBps']['recv']:.2f} GB/s, "
                     f"round trip {r['rtt_small_us']:.1f} us hot, {r['rtt_after_idle_us']:.1f} us "
                     f"(p99 {r['rtt_after_idle_p99_us']:.1f}) after 10 ms idle")
        hot = get(results[f"proxy_{t}"], "sync_small_op", "median_us")
        lv = get(local, "sync_small_op", "median_us") or 0.0
        if hot is not None:
            worker = get(results[f"proxy_{t}"], "sync_small_op", "worker_us")
            lines.append(f"  proxy {t} hot sync beyond raw RTT + local: {hot - r['rtt_small_us'] - lv:.1f} us"
                         + (f" (worker's own time {worker:.1f} us)" if worker is not None else ""))
    for side in ["local"] + [f"proxy_{t}" for t in transports]:
        slow = get(results.get(side) or {}, "sync_after_idle", "slowest")
        if slow:
            lines.append(f"slowest syncs after idle, {side}: " + ", ".join(
                f"{s['us']:.0f} us at {s['at_s']:.2f} s" + (f" (gc {s['gc_us']:.0f} us)" if s["gc_us"] else "")
                for s in slow))
    if zipc:
        lines.append(f"raw pyzmq ipc (for reference): round trip {zipc['rtt_small_us']:.1f} us hot, "
                     f"{zipc['rtt_after_idle_us']:.1f} us (p99 {zipc['rtt_after_idle_p99_us']:.1f}) after "
                     f"10 ms idle; 8 MB msgs s/r {zipc['8MB_messages_GBps']['send']:.2f}/"
                     f"{zipc['8MB_messages_GBps']['recv']:.2f} GB/s")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--json")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", choices=["latency", "pipelined"],
                        help="run one case (with GPUWB_WORKER_PROFILE): latency is the hot sync "
                             "only, no idle case; no table, the JSON alone")
    parser.add_argument("--latency-reps", type=int, default=2000)
    parser.add_argument("--pipelined-ops", type=int, default=20000)
    parser.add_argument("--gemm", type=int, default=8192, help="GEMM size (0 to skip)")
    parser.add_argument("--gemm-reps", type=int, default=20)
    parser.add_argument("--transfer-mb", type=int, default=256)
    parser.add_argument("--transfer-reps", type=int, default=5)
    parser.add_argument("--compare-policies", action="store_true",
                        help="also: a lone session's small-op cases under policies none, fair and share")
    parser.add_argument("--policy", default="fair", help="the main pool's policy (default fair)")
    parser.add_argument("--transports", default="ipc,tcp",
                        help="the proxy over these transports, each its own session (ipc,tcp)")
    parser.add_argument("--idle-reps", type=int, default=300,
                        help="syncs after 10 ms idle, per side (0 to skip)")
    parser.add_argument("--no-local", action="store_true",
                        help="no local CuPy side: this process never opens a CUDA context of its "
                             "own (a laptop's notebook has none beside the worker's)")
    parser.add_argument("--served", action="store_true",
                        help="the main pool in a process of its own (gpuwb-backend serve)")
    args = parser.parse_args(argv)
    if args.quick:
        args.latency_reps, args.pipelined_ops, args.transfer_mb = 300, 3000, 32
        args.idle_reps = min(args.idle_reps, 50)
        args.gemm = min(args.gemm, 512)
        args.gemm_reps = 3

    cupy = None if args.no_local else local_cupy()
    results = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
               "python": sys.version.split()[0], "local": None}
    if cupy is not None:
        props = cupy.cuda.runtime.getDeviceProperties(0)
        results["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        results["cupy"] = cupy.__version__
    elif args.gemm > 1024:
        args.gemm = 1024  # NumPy device: keep the run short

    results["policy"] = args.policy
    results["transfer_mb"] = args.transfer_mb
    results["served"] = args.served
    with open_pool(args.policy, args.devices, args.served) as pool, \
            sessions_by_transport(pool, args.transports) as sessions:
        results["pool_device"] = next(iter(sessions.values())).device
        sides = ([("local", cupy, None)] if cupy is not None else []) + [
            (f"proxy_{t}", None, s) for t, s in sessions.items()]
        measured = run_cases(sides, args)
        staged = {t for t, s in sessions.items() if s.staging is not None}   # (while open)
    results["local"] = measured.get("local")
    for t in sessions:
        results[f"proxy_{t}"] = measured.get(f"proxy_{t}")
        if results[f"proxy_{t}"] is not None:   # large transfers through shared memory?
            results[f"proxy_{t}"]["staged"] = t in staged
    results["transports"] = list(sessions)
    # the raw floor of each session transport: ipc:// sessions reach their worker over a
    # plain Unix socket (our framing), tcp:// ones over ZeroMQ; ZeroMQ's ipc:// for reference
    bases = dict.fromkeys(t.partition("-")[0] for t in sessions)
    results["raw_zmq"] = {t: bench_raw(args.transfer_mb * MB, args.transfer_reps,
                                       "unix" if t == "ipc" else t) for t in bases}
    if "ipc" in sessions:
        results["raw_zmq_ipc"] = bench_raw(args.transfer_mb * MB, args.transfer_reps, "zmq-ipc")
    if staged:
        results["staging_floor"] = bench_staging_floor(args.transfer_mb * MB, args.transfer_reps)
    if args.compare_policies:
        results["policies"] = compare_policies(args)
    if args.only:   # (no table: the JSON alone, written to --json too)
        emit(results, args.json)
        return

    print(table(results))
    if "policies" in results:
        print()
        print(policy_table(results["policies"]))
    emit(results, args.json)


if __name__ == "__main__":
    main()
