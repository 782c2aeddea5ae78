"""Issue 52: what swapping an idle session costs, beside the host's own copy rate.

A session fills --gib of device memory in --arrays arrays and goes idle; the pool (its
``swap_idle`` short) swaps it out, and its next op brings it back. Measured: the worker's
own swap-out and swap-in times (the pool's status, ``swap_seconds``), the client's wait for
its first op after the swap (the swap-in as a user meets it), the device memory before and
after, bitwise equality (each array's checksum before and after), and as the reference the
device's pinned copy rate each way for the same bytes (local CuPy in this process on a GPU,
NumPy's memcpy on the NumPy device), with what new host memory costs (its first touch;
pinning it). Each tier in the same run (``--tiers host,file``): host memory (a host budget
that holds the session; on a GPU each way of copying, ``--host-copies staged,pinned``), and
the swap directory (no host budget; ``--file-dirs /tmp,/dev/shm``: each of them in turn).
``--file-io``: the swap file's own code beside them, no device (benchmarks/swap_file_rates.py:
each way of writing and thread count, in each directory). Prints a table and JSON.

    python benchmarks/swap.py --devices 0 --gib 10 --arrays 10 --json out.json

``--leak-cycles N``: N swap cycles of one --leak-mib session, half in host memory and half
on disk each time; the worker's and the pool's resident memory and descriptors, the swap
directory's files and the door's host budget in use, before and after (issue 52: "1 000
swap cycles leak nothing"). Exits 1 on a leak.

``--users N --user-gib G``: N users' notebooks of G GiB each on one device (more than it
holds; ``--ballast-gib B``: B GiB of a GPU held by the benchmark first, so that an H200
stands for an 80 GB GPU), each active in turn for --turns rounds: each turn runs one op over all of its arrays
(its return: the swap-in when it was swapped out, swapping the idle ones out first), then
the user goes idle. Every turn must be served with no out-of-memory error, bitwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402

import kernelproxy  # noqa: E402
from gpu_backend.pool import LocalPool  # noqa: E402
from json_out import emit  # noqa: E402
from swap_file_rates import file_rates, print_rates  # noqa: E402
from kernelproxy.modules import module_for  # noqa: E402

GIB = 1 << 30


def _row(session) -> dict:
    return next(r for r in session.status()["sessions"] if r["session"] == session.id)


def _wait(predicate, timeout: float = 600.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.01)
    raise TimeoutError("the pool did not act in time")


def reference_rates(devices: str, nbytes: int) -> dict:
    """The host's own copy rates for *nbytes* (at most 2 GiB), GB/s; and what new host memory
    costs, which a swap to host memory pays beside the copy: the first touch of pageable
    pages (one thread), and on a GPU pinning them (``cudaHostAlloc``)."""
    n = min(nbytes, 2 * GIB)
    fresh = np.empty(n, np.uint8)
    t = time.perf_counter(); fresh.fill(1); touch = time.perf_counter() - t
    del fresh
    if devices == "cpu":
        a = np.ones(n, np.uint8)
        b = np.empty_like(a)
        np.copyto(b, a)   # (the pages touched first)
        t = time.perf_counter(); np.copyto(b, a); dt = time.perf_counter() - t
        return {"what": "NumPy memcpy", "bytes": n, "d2h_gbps": n / dt / 1e9, "h2d_gbps": n / dt / 1e9,
                "first_touch_gbps": n / touch / 1e9}
    import cupy as cp
    with cp.cuda.Device(int(devices.split(",")[0])):
        d = cp.ones(n, cp.uint8)
        pinned = cp.cuda.alloc_pinned_memory(n)
        h = np.frombuffer(pinned, np.uint8, n)
        d.get(out=h); cp.cuda.Device().synchronize()
        t = time.perf_counter(); d.get(out=h); cp.cuda.Device().synchronize(); d2h = time.perf_counter() - t
        t = time.perf_counter(); d.set(h); cp.cuda.Device().synchronize(); h2d = time.perf_counter() - t
        del d, h, pinned
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()
        t = time.perf_counter()
        ptr = cp.cuda.runtime.hostAlloc(n, 0)
        alloc = time.perf_counter() - t
        cp.cuda.runtime.freeHost(ptr)
    return {"what": "CuPy, pinned host memory", "bytes": n, "d2h_gbps": n / d2h / 1e9,
            "h2d_gbps": n / h2d / 1e9, "pinned_alloc_gbps": n / alloc / 1e9,
            "first_touch_gbps": n / touch / 1e9}


def _settled(session, nbytes: int) -> None:
    """Wait until the pool knows *session* holds its *nbytes* (its worker's report has come)
    and has been idle long enough to be swapped out for another."""
    from gpu_backend.door.swap_pressure import PRESSURE_IDLE
    _wait(lambda: (r := _row(session))["idle"] >= PRESSURE_IDLE + 0.1
          and (r["memory_used"] >= nbytes or r["swapped"]))


def turns(args) -> dict:
    """N users in turn on one device (see the module's doc)."""
    from gpu_backend.door.swap_pressure import PRESSURE_IDLE
    each = int(args.user_gib * GIB) // 4
    memory = {"numpy_device_memory": int(args.device_gib * GIB)} if args.devices == "cpu" else {}
    ballast = None
    if args.ballast_gib and args.devices != "cpu":   # (held until the run ends)
        import cupy as cp
        with cp.cuda.Device(int(args.devices.split(",")[0])):
            ballast = cp.empty(int(args.ballast_gib * GIB), cp.uint8)
    rows, errors = [], []
    with tempfile.TemporaryDirectory(dir=args.swap_dir) as swap_dir, \
            LocalPool(devices=args.devices, swap_idle=None, swap_dir=Path(swap_dir) / "swap",
                      memory_limit=int(2 * args.user_gib * GIB) + 2 * GIB, lease_timeout=600,
                      spare_workers=args.users, **memory) as pool:
        users = [kernelproxy.connect(pool.address, pool.token) for _ in range(args.users)]
        data, sums = [], []
        for i, s in enumerate(users):
            t = time.perf_counter()
            a = module_for(s).full(each, i + 1, dtype=np.float32)
            sums.append(float(a.sum()))
            data.append(a)
            rows.append({"turn": 0, "user": i, "first_op_s": time.perf_counter() - t,
                         "was_swapped": False})
            _settled(s, each * 4)   # (idle, as the pool knows it, long enough to be swapped
            # out for the next user)
        for turn in range(1, args.turns + 1):
            for i, s in enumerate(users):
                was = _row(s)["swapped"]
                t = time.perf_counter()
                try:
                    got = float(data[i].sum())
                except Exception as exc:   # what must not happen: recorded, then the run goes on
                    errors.append(f"turn {turn}, user {i}: {type(exc).__name__}: {exc}")
                    got = None
                rows.append({"turn": turn, "user": i, "first_op_s": time.perf_counter() - t,
                             "was_swapped": bool(was), "bitwise": got == sums[i],
                             "swap_seconds": _row(s)["swap_seconds"]})
                _settled(s, each * 4)
        for s in users:
            s.close()
    del ballast
    return {"rows": rows, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="cpu")
    parser.add_argument("--gib", type=float, default=1.0, help="the session's arrays, GiB in all")
    parser.add_argument("--arrays", type=int, default=4)
    parser.add_argument("--cycles", type=int, default=3, help="swap-out and swap-in cycles")
    parser.add_argument("--swap-dir", help="where the pool swaps (default: a temporary directory)")
    parser.add_argument("--users", type=int, default=0, help="N users in turn (see above)")
    parser.add_argument("--user-gib", type=float, default=1.0)
    parser.add_argument("--device-gib", type=float, default=3.0,
                        help="the NumPy device's memory with --users (a GPU has its own)")
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--ballast-gib", type=float, default=0.0,
                        help="with --users on a GPU: this much of its memory held by this "
                             "process first, so that a large GPU stands for a smaller one "
                             "(141 GB less 61 GiB: an 80 GB GPU)")
    parser.add_argument("--tiers", default="host,file",
                        help="which swap tiers to measure: host (host memory, a budget holding "
                             "the session), file (no host budget: the swap directory)")
    parser.add_argument("--host-copies", default="staged,pinned",
                        help="on a GPU, the host tier's ways of copying to measure "
                             "(GPUWB_SWAP_HOST_COPY: devices/cupy_swap_copies.py)")
    parser.add_argument("--file-dirs", help="the file tier in each of these directories "
                                              "(comma-separated; default: --swap-dir)")
    parser.add_argument("--file-io", action="store_true",
                        help="also the swap file's own write and read rates in each directory")
    parser.add_argument("--file-io-gib", type=float, default=4.0)
    parser.add_argument("--file-io-threads", default="1,4,8", help="thread counts of --file-io")
    parser.add_argument("--leak-cycles", type=int, default=0,
                        help="instead: this many swap cycles of one session through both tiers, "
                             "host memory, descriptors, files and budget before and after")
    parser.add_argument("--leak-mib", type=float, default=64.0,
                        help="the session of --leak-cycles, MiB (half fits the host budget)")
    parser.add_argument("--verbose", action="store_true", help="the pool's log on stderr")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.verbose:
        import logging
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.users:
        result = turns(args)
        print(f"{args.users} users of {args.user_gib:g} GiB each in turn on devices {args.devices}, "
              f"{args.turns} rounds")
        print(f"{'turn':<5} {'user':>4} {'swapped before':>14} {'first op s':>10} {'swap s':>7} bitwise")
        for r in result["rows"]:
            print(f"{r['turn']:<5} {r['user']:>4} {str(r['was_swapped']):>14} {r['first_op_s']:>10.3f} "
                  f"{r.get('swap_seconds', 0.0):>7.3f} {r.get('bitwise', '-')}")
        returns = [r["first_op_s"] for r in result["rows"] if r["was_swapped"]]
        print(f"served: {len(result['rows'])} turns, out-of-memory or other errors: "
              f"{len(result['errors'])}; returns from swap: {len(returns)}, slowest "
              f"{max(returns) if returns else 0:.3f} s (target: each <= 1.5 s at 10 GiB's rate)")
        for e in result["errors"]:
            print("  error:", e)
        emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python " + " ".join(sys.argv), **vars(args), **result}, args.json)
        return 0 if not result["errors"] and all(r.get("bitwise", True) for r in result["rows"]) else 1
    if args.leak_cycles:
        result = leak_check(args)
        print(f"{args.leak_cycles} swap cycles of a {args.leak_mib:g} MiB session on devices {args.devices}, "
              f"half in host memory, half on disk (budget {result['budget'] / (1 << 20):g} MiB)")
        print(f"{'':<22} {'before':>14} {'half-way':>14} {'after':>14}")
        for key in ("worker_rss", "worker_fds", "pool_rss", "pool_fds", "swap_files", "budget_held"):
            print(f"{key:<22} {result['before'][key]:>14} {result['middle'][key]:>14} "
                  f"{result['after'][key]:>14}")
        print(f"cycles done: {result['cycles']}, bitwise: {result['bitwise']}, "
              f"{result['seconds']:.1f} s; leaked: {result['leaked'] or 'nothing'}")
        emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python " + " ".join(sys.argv), **vars(args), **result}, args.json)
        return 0 if result["bitwise"] and not result["leaked"] else 1
    nbytes = int(args.gib * GIB)
    reference = reference_rates(args.devices, nbytes)
    dirs = args.file_dirs.split(",") if args.file_dirs else [args.swap_dir]
    runs = []
    for tier in args.tiers.split(","):
        copies = args.host_copies.split(",") if tier == "host" and args.devices != "cpu" else [None]
        for how in copies:
            for where in (dirs if tier == "file" else [args.swap_dir]):
                runs.append({"tier": tier, "copy": how, "dir": where,
                             "cycles": one_session(args, nbytes, tier, how, where)})
    # (after the sessions: their files' writeback is not this part's, nor its theirs)
    rates = file_rates(dirs, int(min(args.file_io_gib, args.gib) * GIB),
                       tuple(int(n) for n in args.file_io_threads.split(","))) if args.file_io else []
    gb = nbytes / 1e9
    print(f"swap of a {args.gib:g} GiB idle session in {args.arrays} arrays, devices {args.devices}")
    print(f"reference ({reference['what']}, {reference['bytes'] / GIB:.2f} GiB): device to host "
          f"{reference['d2h_gbps']:.1f} GB/s, host to device {reference['h2d_gbps']:.1f} GB/s "
          f"({gb / reference['d2h_gbps']:.2f} s and {gb / reference['h2d_gbps']:.2f} s for {gb:.2f} GB)")
    for key, what in (("pinned_alloc_gbps", "cudaHostAlloc (pinning new host memory)"),
                      ("first_touch_gbps", "first touch of new pageable memory, one thread")):
        if key in reference:
            print(f"  {what}: {reference[key]:.1f} GB/s ({gb / reference[key]:.2f} s for {gb:.2f} GB)")
    print_rates(rates, gb)
    print(f"{'tier':<17} {'cycle':<5} {'swapped GiB':>11} {'in host':>8} {'memory before':>14} {'after':>10} "
          f"{'out s':>7} {'in s':>7} {'first op s':>10} {'out GB/s':>8} {'in GB/s':>8} bitwise")
    for run in runs:
        name = _name(run, len(dirs))
        for i, c in enumerate(run["cycles"]):
            print(f"{name:<17} {i:<5} {c['bytes'] / GIB:>11.2f} {c['host_bytes'] / GIB:>7.2f}G "
                  f"{(c['memory_before'] or 0) / GIB:>13.2f}G {c['memory_swapped'] / GIB:>9.2f}G "
                  f"{c['out_s']:>7.3f} {c['in_s']:>7.3f} {c['first_op_s']:>10.3f} "
                  f"{c['bytes'] / 1e9 / max(c['out_s'], 1e-9):>8.1f} {c['bytes'] / 1e9 / max(c['in_s'], 1e-9):>8.1f} "
                  f"{c['bitwise']}")
    for run in runs:
        name = _name(run, len(dirs))
        print(f"targets (a 10 GiB session): swap-out <= 1.5 s, swap-in <= 1.5 s: {name}: out "
              f"{min(c['out_s'] for c in run['cycles']):.3f} s, in (first op) "
              f"{min(c['first_op_s'] for c in run['cycles']):.3f} s for {args.gib:g} GiB")
    cycles = [{**c, "tier": r["tier"], "copy": r["copy"]} for r in runs for c in r["cycles"]]
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "command": "python " + " ".join(sys.argv), "devices": args.devices,
          "gib": args.gib, "arrays": args.arrays, "reference": reference, "file_io": rates,
          "runs": runs, "cycles": cycles}, args.json)
    return 0 if all(c["bitwise"] for c in cycles) else 1


def _name(run: dict, dirs: int) -> str:
    name = run["tier"] + (f":{run['copy']}" if run["copy"] else "")
    return name + (f":{run['dir']}" if run["tier"] == "file" and dirs > 1 else "")


def one_session(args, nbytes: int, tier: str, how: str | None, swap_dir: str | None) -> list[dict]:
    """--cycles swap-outs and swap-ins of one session of *nbytes* through *tier* (``host``:
    a host budget that holds it all, copied the way *how* says on a GPU; ``file``: none, in
    *swap_dir*)."""
    each = nbytes // args.arrays // 4
    budget = 2 * nbytes + GIB if tier == "host" else 0
    if how:   # (the pool's workers inherit this process's environment)
        os.environ["GPUWB_SWAP_HOST_COPY"] = how
    try:
        with tempfile.TemporaryDirectory(dir=swap_dir) as where, \
                LocalPool(devices=args.devices, swap_idle=1.0, swap_dir=Path(where) / "swap",
                          memory_limit=2 * nbytes + 2 * GIB, lease_timeout=600,
                          swap_host_memory=budget) as pool:
            # (idle 1 s: back in, the session stays so long enough for its report to be read)
            s = kernelproxy.connect(pool.address, pool.token)
            cp = module_for(s)
            arrays = []
            for i in range(args.arrays):   # (distinct bits in each; no temporaries on the way)
                a = cp.empty(each, dtype=cp.float32)
                a[...] = i + 1.25
                a[::7] = -(i + 0.5)
                arrays.append(a)
            sums = [float(a.view(cp.int32).sum(dtype=cp.int64)) for a in arrays]
            cycles = []
            for _ in range(args.cycles):
                first = _wait(lambda: (r := _row(s))["memory_used"] >= 0.9 * nbytes and r
                              or r["swapped"] and r)
                used = None if first["swapped"] else first["memory_used"]
                row = _wait(lambda: (r := _row(s))["swapped"] and r)
                out_s = row["swap_seconds"]
                t = time.perf_counter()
                float(arrays[0][0])            # the first op after: everything comes back first
                first_op = time.perf_counter() - t
                back = _wait(lambda: (r := _row(s))["swapped"] == 0 and r)
                equal = [float(a.view(cp.int32).sum(dtype=cp.int64)) for a in arrays] == sums
                cycles.append({"bytes": row["swapped"], "host_bytes": row.get("swapped_host") or 0,
                               "memory_before": used, "memory_swapped": row["memory_used"],
                               "out_s": out_s, "in_s": back["swap_seconds"],
                               "first_op_s": first_op, "bitwise": equal})
            s.close()
    finally:
        os.environ.pop("GPUWB_SWAP_HOST_COPY", None)
    return cycles


def _proc(pid: int) -> tuple[int, int]:
    """(resident bytes, open descriptors) of process *pid* (Linux /proc)."""
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


#: resident memory the second half of the leak check's cycles may add without a leak
RSS_SLACK = 2 << 20


def leak_check(args) -> dict:
    """--leak-cycles swap-outs and swap-ins of one session of --leak-mib MiB in two arrays,
    a host budget holding one of them: each cycle goes through both tiers. Measured before
    the first cycle and after the last (each time with the arrays back on the device): the
    worker's and the pool's resident memory and open descriptors, the files in the swap
    directory, the door's count of its host budget in use; all also half-way. A leak is a
    worker's descriptor, a file or budget more after than before, the pool's descriptors
    more than a spare worker's start holds (4) above the most seen before and staying so
    (read again for up to 30 s), or resident memory grown
    in the second half by more than RSS_SLACK: the allocator settles in the first cycles
    (glibc's raises its mmap threshold to the sizes it sees freed, and then keeps some of
    them), which grows resident memory once, by a few MiB; a leak grows it with each cycle."""
    half = int(args.leak_mib * (1 << 20)) // 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=args.swap_dir) as swap_dir, \
            LocalPool(devices=args.devices, swap_idle=0.05, swap_dir=Path(swap_dir) / "swap",
                      memory_limit=4 * half + GIB, lease_timeout=600, swap_host_memory=half) as pool:
        folder = Path(swap_dir) / "swap"
        s = kernelproxy.connect(pool.address, pool.token)
        cp = module_for(s)
        a = cp.zeros(half // 8, dtype=cp.int64)
        b = cp.zeros(half // 8, dtype=cp.int64)
        int(a[0] + b[0])
        worker = next(w for w in pool.door.host.workers.values()
                      if w.session is not None and w.session.sid == s.id)

        def measure() -> dict:
            """(With the arrays back: an op, then the figures; again if the session went out
            meanwhile, as it does 50 ms idle.)"""
            while True:
                int(a[0])
                got = figures()
                if not _row(s)["swapped"] and got["budget_held"] == 0 and not got["swap_files"]:
                    return got

        def figures() -> dict:
            session = pool.door.sessions[s.id]
            wr, wf = _proc(worker.process.pid)
            pr, pf = _proc(os.getpid())
            return {"worker_rss": wr, "worker_fds": wf, "pool_rss": pr, "pool_fds": pf,
                    "swap_files": len([p for p in folder.rglob("*") if p.is_file()]) if folder.exists() else 0,
                    "budget_held": pool.door.swaps.host_held(session)}

        # (one cycle first: the copy paths' imports, threads and buffers made once; each
        # cycle is counted by the session's swaps, as back in it goes out again 50 ms later)
        _wait(lambda: _row(s)["swaps"] >= 1)
        before = measure()
        done, middle = 0, None
        for _ in range(args.leak_cycles):
            if done == args.leak_cycles // 2:
                middle = measure()
            out = _row(s)["swaps"] + 1
            _wait(lambda: (r := _row(s))["swaps"] >= out and r["swapped"])
            a += 1
            b -= 1
            int(a[0])
            done += 1
        after = measure()
        # (the pool's process is also this client's, and a spare worker it starts holds a few
        # descriptors for a moment: more than the most seen before by that many is a leak,
        # if it stays so. On a loaded 2-core host two spares' starts were caught at once, 6
        # more; a leak stays, a start ends: read again while it is above, for up to 30 s)
        fd_bound = max(before["pool_fds"], middle["pool_fds"]) + 4
        settle = time.monotonic() + 30.0
        while after["pool_fds"] > fd_bound and time.monotonic() < settle:
            time.sleep(0.2)
            after["pool_fds"] = min(after["pool_fds"], _proc(os.getpid())[1])
        bitwise = int(a.sum()) == done * (half // 8) and int(b.sum()) == -done * (half // 8)
        s.close()
    leaked = [k for k in ("worker_fds", "swap_files", "budget_held") if after[k] > before[k]]
    leaked += ["pool_fds"] if after["pool_fds"] > fd_bound else []
    leaked += [k for k in ("worker_rss", "pool_rss") if after[k] - middle[k] > RSS_SLACK]
    return {"cycles": done, "budget": half, "before": before, "middle": middle, "after": after,
            "leaked": leaked,
            "bitwise": bitwise, "seconds": time.perf_counter() - started}


if __name__ == "__main__":
    sys.exit(main())
