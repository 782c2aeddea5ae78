"""Whether a cuRAND generator can be put back where it was (issue 50): the question a draw run
ahead of its client asks.

    python benchmarks/curand_offset_probe.py [--json out.json]

A replay run ahead (docs/stretch-replay.md) must be undone when the client then issues
something else; a random draw cannot be undone by freeing its result, because the
generator has moved on. It can be undone if the generator's position is known and can be
set: cuRAND's ``curandSetGeneratorOffset`` sets the absolute position in the sequence of a
seed. This probe asks, for each ``curandGenerate*`` CuPy's ``RandomState`` calls (uniform
and normal, float32 and float64), against plain draws in order on a fresh generator of the
same seed (what local CuPy gives):

* *offset*: which position, as a multiple of the values drawn so far, gives the next draw
  on a fresh generator (``offset(n1) + gen(n2) == gen(n1); gen(n2)``), if any;
* *rewind*: on the generator that drew ``n1`` and then a draw ``n2`` run ahead, setting the
  offset back to ``n1``'s position makes the next draw ``n3`` and the one after bitwise
  what a generator that never ran ahead draws;
* the cost of the draw just after a rewind (the generator re-seeds its states) against a
  plain draw.

A table, then JSON. Needs a GPU with CuPy.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402  (beside this file)

SEED = 1234
#: (n1, n2, n3) draws: sizes a loop would draw, odd and tiny ones, and sizes that do not
#: divide the generator's threads
SIZES = [(1 << 20, 1 << 20, 1 << 20), (1000, 1 << 20, 4096), (1 << 20, 1000, 10),
         (10, 30, 1 << 16), (12290, 1 << 20, 77778)]
MULTIPLES = (1, 2, 4)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    import cupy
    from cupy_backends.cuda.libs import curand

    funcs = {"uniform float32": (curand.generateUniform, cupy.float32, ()),
             "uniform float64": (curand.generateUniformDouble, cupy.float64, ()),
             "normal float32": (curand.generateNormal, cupy.float32, (0.0, 1.0)),
             "normal float64": (curand.generateNormalDouble, cupy.float64, (0.0, 1.0))}

    def generator(offset=None):
        g = curand.createGenerator(curand.CURAND_RNG_PSEUDO_DEFAULT)
        curand.setPseudoRandomGeneratorSeed(g, SEED)
        curand.setGeneratorOffset(g, 0 if offset is None else offset)
        return g

    def draw(g, name, n):
        fn, dtype, extra = funcs[name]
        out = cupy.empty(n, dtype=dtype)
        fn(g, out.data.ptr, n, *extra)
        return out

    rows = []
    for name in funcs:
        for n1, n2, n3 in SIZES:
            if name.startswith("normal") and (n1 % 2 or n2 % 2 or n3 % 2):
                continue   # (CuPy draws an even count of normals, one more for an odd size)
            plain = generator()
            first = draw(plain, name, n1)
            second = draw(plain, name, n2)
            del first
            found = None
            for k in MULTIPLES:
                fresh = generator(k * n1)
                same = bool((draw(fresh, name, n2) == second).all())
                curand.destroyGenerator(fresh)
                if same:
                    found = k
                    break
            reference = generator()
            draw(reference, name, n1)
            want3 = draw(reference, name, n3)
            want4 = draw(reference, name, n2)
            ahead = generator()
            draw(ahead, name, n1)
            draw(ahead, name, n2)                       # run ahead, then not meant
            rewind_ok = None
            rewind_us = plain_us = None
            if found is not None:
                cupy.cuda.Device().synchronize()
                t0 = time.perf_counter()
                curand.setGeneratorOffset(ahead, found * n1)
                got3 = draw(ahead, name, n3)
                cupy.cuda.Device().synchronize()
                rewind_us = (time.perf_counter() - t0) * 1e6
                t0 = time.perf_counter()
                got4 = draw(ahead, name, n2)
                cupy.cuda.Device().synchronize()
                plain_us = (time.perf_counter() - t0) * 1e6
                rewind_ok = bool((got3 == want3).all()) and bool((got4 == want4).all())
            for g in (plain, reference, ahead):
                curand.destroyGenerator(g)
            rows.append({"draw": name, "n1": n1, "n2": n2, "n3": n3, "offset_multiple": found,
                         "rewind_bitwise": rewind_ok, "draw_after_rewind_us": rewind_us,
                         "plain_draw_us": plain_us})
    # CuPy's own RandomState, through its methods (what a user calls)
    methods = []
    for method, multiple in (("random_sample", None), ("standard_normal", None)):
        rs = cupy.random.RandomState(SEED)
        getattr(rs, method)(1 << 20)
        want = getattr(rs, method)(4096)
        ahead = cupy.random.RandomState(SEED)
        getattr(ahead, method)(1 << 20)
        getattr(ahead, method)(1 << 20)                 # run ahead
        ok = {}
        for k in MULTIPLES:
            curand.setGeneratorOffset(ahead._generator, k * (1 << 20))
            ok[k] = bool((getattr(ahead, method)(4096) == want).all())
        methods.append({"method": method, "rewind_bitwise_by_multiple": ok})
    print(f"{'draw':18} {'n1':>8} {'n2':>8} {'n3':>8} {'offset = k * n1':>16} {'rewind bitwise':>15} "
          f"{'draw after rewind us':>21} {'plain draw us':>14}")
    for r in rows:
        print(f"{r['draw']:18} {r['n1']:8} {r['n2']:8} {r['n3']:8} {str(r['offset_multiple']):>16} "
              f"{str(r['rewind_bitwise']):>15} {r['draw_after_rewind_us'] or 0:21.1f} {r['plain_draw_us'] or 0:14.1f}")
    for r in methods:
        print(f"RandomState.{r['method']}: rewound by k * n1 bitwise: {r['rewind_bitwise_by_multiple']}")
    emit({"gpu": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
          "cupy": cupy.__version__, "curand": curand.getVersion(), "rows": rows, "methods": methods},
         args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
