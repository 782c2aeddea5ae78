"""Profile the client side of the sync small op: where a notebook's float((x + 1).sum()) spends.

    python benchmarks/profile_client.py [--reps 3000] [--devices auto] [--served]

Runs the op against a pool (embedded, or with --served its own process) under
cProfile in this process and prints the median latency and the top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernelproxy  # noqa: E402
from gpu_backend.pool import LocalPool  # noqa: E402
from kernelproxy.modules import module_for  # noqa: E402
from served_pool import ServedPool  # noqa: E402
from worker_micro import split_sync_op  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=3000)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--served", action="store_true")
    args = parser.parse_args()
    pool = ServedPool("none", args.devices) if args.served else LocalPool(devices=args.devices).start()
    try:
        session = kernelproxy.connect(pool.address, pool.token)
        xp = module_for(session)
        x = xp.arange(1024, dtype=xp.float32)
        for _ in range(200):
            float((x + 1).sum())
        plain = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            float((x + 1).sum())
            plain.append(time.perf_counter() - t0)
        split = split_sync_op(x, args.reps, session)
        print("client side of one sync, medians in us: " + ", ".join(
            f"{k} {v:.1f}" for k, v in split.items()))
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.reps):
            float((x + 1).sum())
        profile.disable()
        print(f"median {statistics.median(plain) * 1e6:.1f} us; worker time per batch "
              f"{session.worker_seconds / max(1, args.reps * 2 + 200) * 1e6:.1f} us (approx.)")
        pstats.Stats(profile).sort_stats("tottime").print_stats(18)
        session.close()
    finally:
        pool.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
