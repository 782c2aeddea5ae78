"""Uploads and downloads of a few hundred KiB to a few MiB, local CuPy beside the proxy.

    python benchmarks/upload_sizes.py [--devices auto] [--sizes 262144,1048576,8000000]
                                      [--reps 30] [--sides ipc,ipc-framed] [--json out.json]

A program that uploads its data once a run (``bootstrap_rng``'s sample of 10^6 float64, 8 MB)
or a minibatch each step pays for an upload of this size, which the 256 MB figures of
``overhead.py`` do not show: up to the device's chunk size (8 MiB on a GPU) an upload went as
one frame of its batch through the socket, the kernel copying it twice, while larger ones go
through the same-host session's staging ring. Since 2026-11-28 an upload over
``STAGED_UPLOAD_BYTES`` (kernelproxy/session.py) takes the ring too; the side ``ipc-framed``
(``GPUWB_STAGED_UPLOADS=0``) is the way before, beside it in the same pool.

Each measure: ``cp.asarray(host)`` and a read of its last element (the upload done on the
device), and ``a.get()`` of an array of that size, the median of *reps* (alternating sides
each repetition), in ms, with each side's ratio to local CuPy's. A table, then JSON.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402  (beside this file)
from programs import _xp, local_module  # noqa: E402
from served_pool import open_pool, sessions_by_transport  # noqa: E402


def _upload(xp, host) -> float:
    began = time.perf_counter()
    a = xp.asarray(host)
    float(a[-1])
    return time.perf_counter() - began


def _download(xp, a) -> float:
    began = time.perf_counter()
    a.get() if hasattr(a, "get") else np.asarray(a).copy()
    return time.perf_counter() - began


def measure(sides: dict, local, sizes: list[int], reps: int) -> dict:
    """{size: {side: {"up_ms", "down_ms"}}}, the local side's too ("local")."""
    out = {}
    for size in sizes:
        host = np.random.default_rng(size).random(size // 8)
        times = {name: {"up": [], "down": []} for name in ["local", *sides]}
        arrays = {name: _xp(name, local, s).asarray(host) for name, s in [("local", None), *sides.items()]}
        for rep in range(reps + 2):   # (two warm-ups)
            for name, session in [("local", None), *sides.items()]:
                xp = _xp(name, local, session)
                up, down = _upload(xp, host), _download(xp, arrays[name])
                if rep >= 2:
                    times[name]["up"].append(up)
                    times[name]["down"].append(down)
        for name, session in sides.items():   # (the bits are the host's, both ways)
            got = arrays[name].get()
            assert np.array_equal(got, host), f"{name}: a download differs from what went up"
        out[size] = {name: {"up_ms": statistics.median(t["up"]) * 1e3,
                            "down_ms": statistics.median(t["down"]) * 1e3} for name, t in times.items()}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--sizes", default="262144,1048576,4194304,8000000,16777216")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--sides", default="ipc,ipc-framed")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    local, local_kind = local_module()
    sizes = [int(v) for v in args.sizes.split(",")]
    with open_pool("fair", args.devices, False) as pool:
        with sessions_by_transport(pool, args.sides) as sessions:
            results = measure(sessions, local, sizes, args.reps)
    sides = list(sessions)
    print(f"{'bytes':>10}  {'local up ms':>11}  " + "  ".join(f"{s + ' up':>16}" for s in sides)
          + f"  {'local down ms':>13}  " + "  ".join(f"{s + ' down':>18}" for s in sides))
    for size, row in results.items():
        lu, ld = row["local"]["up_ms"], row["local"]["down_ms"]
        print(f"{size:>10}  {lu:>11.3f}  "
              + "  ".join(f"{row[s]['up_ms']:>8.3f} ({row[s]['up_ms'] / lu:5.2f}x)" for s in sides)
              + f"  {ld:>13.3f}  "
              + "  ".join(f"{row[s]['down_ms']:>10.3f} ({row[s]['down_ms'] / ld:5.2f}x)" for s in sides))
    emit({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
          "command": "python benchmarks/upload_sizes.py " + " ".join(argv if argv is not None else sys.argv[1:]),
          "local_kind": local_kind, "reps": args.reps,
          "results": {str(k): v for k, v in results.items()}}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
