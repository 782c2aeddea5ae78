"""Does an op given a NaN scalar give the same NaN bits whether CuPy is handed the scalar as a
Python float or as a 0-d array (as a held stretch's graphs read a scalar parameter, from
their parameter block)? And what does the pool give, the stretch replayed through graphs?

    python benchmarks/nan_param_probe.py [--devices auto]

Found by benchmarks/unseen_speed.py (H200 run 274): once a stretch closing with downloads was
replayed through graphs, ``x + s``, ``arctan2(x, s)`` with ``s = -nan`` gave ``+nan`` where
local CuPy gave ``-nan``. For each op and each of ``nan`` and ``-nan``, prints the sign bit
of every NaN element: local with a Python float, local with a 0-d array, and the pool (a
loop of the op and a download, held and replayed). A table, then JSON.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from json_out import emit  # noqa: E402
from programs import local_module  # noqa: E402

OPS = {
    "add": lambda xp, x, s: x + s,
    "mul": lambda xp, x, s: x * s,
    "arctan2": lambda xp, x, s: xp.arctan2(x, s),
    "maximum": lambda xp, x, s: xp.maximum(x, s),
    "fmin": lambda xp, x, s: xp.fmin(x, s),
    "copysign": lambda xp, x, s: xp.copysign(x, s),
}
VALUES = {"nan": math.nan, "-nan": -math.nan}


def signs(a: np.ndarray) -> str:
    """Each NaN element's sign: + or -, a dot for a number."""
    bits = np.asarray(a, dtype=np.float64).view(np.uint64)
    return "".join("." if v == v else ("-" if b >> 63 else "+")
                   for v, b in zip(np.asarray(a).tolist(), bits.tolist()))


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    local, kind = local_module()
    base = np.array([-2.0, -0.0, 0.0, 1.5, math.inf, -math.inf, math.nan, -math.nan])

    import kernelproxy
    from gpu_backend.pool import LocalPool
    from kernelproxy.modules import module_for
    rows = []
    with LocalPool(devices=args.devices) as pool:
        for name, op in OPS.items():
            for label, s in VALUES.items():
                x = local.asarray(base)
                scalar = signs(_host(op(local, x, s)))
                zero_d = signs(_host(op(local, x, local.asarray(np.float64(s)))))
                session = kernelproxy.connect(pool.address, pool.token)
                try:
                    cp = module_for(session)
                    px = cp.asarray(base)
                    got = [op(cp, px, s).get() for _ in range(12)]   # (held, then replayed)
                    figures = session.memory_info()["stretches"]
                finally:
                    session.close()
                rows.append({"op": name, "s": label, "local_scalar": scalar,
                             "local_0d": zero_d, "pool": signs(got[-1]),
                             "pool_first": signs(got[0]), "graphed": figures.get("graphed")})
        # (one session a op, its scalar cycling nan, nan, -nan, -nan as special_scalars'
        # does: the replayed stretch's parameter changes sign between replays)
        cycling = {}
        for name, op in OPS.items():
            session = kernelproxy.connect(pool.address, pool.token)
            try:
                cp = module_for(session)
                px, x = cp.asarray(base), local.asarray(base)
                wrong = []
                for i in range(24):
                    s = VALUES["nan" if (i // 2) % 2 == 0 else "-nan"]
                    want, got = signs(_host(op(local, x, s))), signs(op(cp, px, s).get())
                    if want != got:
                        wrong.append((i, want, got))
                cycling[name] = {"wrong": wrong,
                                 "graphed": session.memory_info()["stretches"].get("graphed")}
            finally:
                session.close()
    print(f"{'op':10s} {'s':5s} {'local scalar':>13s} {'local 0-d':>10s} {'pool first':>11s} "
          f"{'pool last':>10s} graphed   (x = -2 -0 0 1.5 inf -inf nan -nan; {kind})")
    for r in rows:
        print(f"{r['op']:10s} {r['s']:5s} {r['local_scalar']:>13s} {r['local_0d']:>10s} "
              f"{r['pool_first']:>11s} {r['pool']:>10s} {r['graphed']}")
    print("\nthe scalar cycling nan, nan, -nan, -nan (24 steps): steps whose NaN signs differ")
    for name, c in cycling.items():
        print(f"{name:10s} {len(c['wrong']):3d} of 24 (graphed {c['graphed']})"
              + (f"  first: step {c['wrong'][0][0]} local {c['wrong'][0][1]} pool "
                 f"{c['wrong'][0][2]}" if c["wrong"] else ""))
    emit({"local": kind, "rows": rows, "cycling": cycling}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
