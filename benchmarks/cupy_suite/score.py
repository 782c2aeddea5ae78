"""Compare one side's outcomes of CuPy's suite with the baseline's: per folder and causes.

    python benchmarks/cupy_suite/score.py BASELINE.json PROXY.json [--json OUT]

A test counts for a folder when it *passed* on the baseline (local CuPy on the same
GPU, or NumPy posing as CuPy where no GPU exists). It passes through the proxy when
the proxy's run passed it too; otherwise it is a *proxy bug*, and its cause is the
proxy's exception (type and first line), or its module's collection error when the
module did not import through the proxy. Causes are grouped with numbers blanked.
The test modules of ``core_tests`` that test CUDA internals (``CORE_INTERNALS``, each with
its reason), and the classes of other modules that do (``CORE_INTERNAL_CLASSES``), form a
row of their own, outside the overall figure.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict

__all__ = ["FOLDERS", "folder_of", "score", "table"]

#: The folders of the suite that issue 9 scores, by short name.
FOLDERS = {
    "creation": "cupy_tests/creation_tests", "manipulation": "cupy_tests/manipulation_tests",
    "indexing": "cupy_tests/indexing_tests", "logic": "cupy_tests/logic_tests",
    "math": "cupy_tests/math_tests", "sorting": "cupy_tests/sorting_tests",
    "statistics": "cupy_tests/statistics_tests", "linalg": "cupy_tests/linalg_tests",
    "padding": "cupy_tests/padding_tests", "binary": "cupy_tests/binary_tests",
    "polynomial": "cupy_tests/polynomial_tests", "functional": "cupy_tests/functional_tests",
    "io": "cupy_tests/io_tests", "random": "cupy_tests/random_tests", "fft": "cupy_tests/fft_tests",
    "core": "cupy_tests/core_tests",
    "scipy_special": "cupyx_tests/scipy_tests/special_tests",
    "scipy_ndimage": "cupyx_tests/scipy_tests/ndimage_tests",
    "scipy_signal": "cupyx_tests/scipy_tests/signal_tests",
    "scipy_fft": "cupyx_tests/scipy_tests/fft_tests",
    "scipy_linalg": "cupyx_tests/scipy_tests/linalg_tests",
}


#: Test modules of ``core_tests`` that test CUDA internals rather than CuPy's array API
#: (issue 9 scores "core_tests, the parts that are not CUDA internals"): each is scored in
#: its own row, ``core_internals``, which the overall figure leaves out (and shows beside).
CORE_INTERNALS = {
    "test_ndarray_cuda_array_interface.py": "device pointers and CUDA streams handed to other libraries",
    "test_dlpack.py": "DLPack capsules: device pointers (remote memory cannot be named by address)",
    "test_internal.py": "cupy._core.internal, CuPy's private shape helpers",
    "test_cub_reduction.py": "CUB kernel selection inside CuPy",
    "test_mdspan.py": "mdspan views of CuPy's CUDA C++ headers (cupy._core._scalar)",
    "test_userkernel.py": "texture objects and the kernel cache of cupy.cuda",
    "test_function.py": "cupy.cuda.function and the compiler's headers",
    "test_include.py": "CuPy's CUDA headers compiled with NVRTC",
    "test_syncdetect.py": "synchronisation detection on CUDA streams",
    "test_carray.py": "32-bit index boundaries of CuPy's kernel arguments",
    "test_gufuncs.py": "cupy._core._gufuncs, a private class",
    "test_scan.py": "cupy._core._routines_math.scan, a private kernel",
    "fusion_tests/test_optimization.py": "cupy.fuse's compiler, through mocks of its tracer",
    "fusion_tests/test_kernel_cache.py": "cupy.fuse's kernel cache, through mocks of its tracer",
}
#: Test classes of scored ``core_tests`` modules that test the same internals (the rest of
#: their module is ordinary API and stays scored), by ``module::class``, each with its reason.
CORE_INTERNAL_CLASSES = {
    "test_ndarray_reduction.py::TestCubReduction":
        "CUB kernel selection inside CuPy, through mocks of cupy._core._routines_statistics.cub "
        "(as test_cub_reduction.py)",
    "test_reduction.py::TestReductionKernelCachedCode":
        "the kernel cache of a ReductionKernel (its private _cached_codes)",
}
#: Rows shown but not part of the overall figure.
NOT_SCORED = frozenset({"core_internals"})


def folder_of(nodeid: str) -> str:
    """The short name of the folder a test id (relative to the suite's root) is in."""
    nodeid = nodeid.removeprefix("tests/")
    parts = nodeid.split("::")
    module = parts[0].removeprefix(FOLDERS["core"] + "/")
    if module in CORE_INTERNALS or (len(parts) > 1 and f"{module}::{parts[1]}" in CORE_INTERNAL_CLASSES):
        return "core_internals"
    for name, path in FOLDERS.items():
        if nodeid.startswith(path + "/"):
            return name
    return nodeid.split("/")[1] if nodeid.count("/") > 1 else nodeid.split("/")[0]


def _group(cause: str | None) -> str:
    return re.sub(r"\d+", "N", cause or "failed")[:140]


def score(baseline: dict, side: dict) -> dict:
    """Per folder: baseline passes, passes through the side, its bugs; bugs grouped by cause."""
    base, other = baseline["outcomes"], side["outcomes"]
    collect_errors = {nodeid: entry[1] for nodeid, entry in other.items() if entry[0] == "collect-error"}
    folders: dict = defaultdict(lambda: {"baseline_passed": 0, "passed": 0, "bugs": 0})
    causes: Counter = Counter()
    examples: dict = {}
    for nodeid, (outcome, _) in base.items():
        if outcome != "passed":
            continue
        row = folders[folder_of(nodeid)]
        row["baseline_passed"] += 1
        mine = other.get(nodeid)
        if mine is not None and mine[0] == "passed":
            row["passed"] += 1
            continue
        row["bugs"] += 1
        if mine is None:
            module = nodeid.split("::")[0]
            cause = collect_errors.get(module)
            cause = f"module does not import: {cause}" if cause else "not run"
        else:
            cause = mine[1] or mine[0]
        key = _group(cause)
        causes[key] += 1
        examples.setdefault(key, nodeid)
    keys = ("baseline_passed", "passed", "bugs")
    total = {k: sum(r[k] for name, r in folders.items() if name not in NOT_SCORED) for k in keys}
    everything = {k: sum(r[k] for r in folders.values()) for k in keys}
    for row in list(folders.values()) + [total, everything]:
        row["rate"] = row["passed"] / row["baseline_passed"] if row["baseline_passed"] else None
    return {"folders": dict(sorted(folders.items())), "total": total, "total_with_internals": everything,
            "causes": [{"count": n, "cause": c, "example": examples[c]} for c, n in causes.most_common()]}


def table(result: dict, top: int = 25) -> str:
    lines = [f"{'folder':16} {'baseline':>9} {'proxy':>9} {'rate':>7} {'bugs':>6}", "-" * 52]
    rows = list(result["folders"].items()) + [("overall", result["total"])]
    if "total_with_internals" in result:
        rows.append(("overall+internals", result["total_with_internals"]))
    for name, row in rows:
        rate = f"{row['rate']:.1%}" if row["rate"] is not None else "-"
        note = "  (not scored: CUDA internals)" if name in NOT_SCORED else ""
        lines.append(f"{name:16} {row['baseline_passed']:9d} {row['passed']:9d} {rate:>7} "
                     f"{row['bugs']:6d}{note}")
    if result["causes"]:
        lines += ["", "proxy bugs by cause (count, cause, one test):"]
        for entry in result["causes"][:top]:
            lines.append(f"{entry['count']:6d}  {entry['cause']}\n        {entry['example']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline")
    parser.add_argument("side")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    with open(args.baseline) as fh, open(args.side) as fh2:
        result = score(json.load(fh), json.load(fh2))
    print(table(result))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
