"""Run CuPy's own test suite on each side and score the proxy against the baseline.

    python benchmarks/cupy_suite/run.py [--sides local,proxy] [--folders creation,math,...]
        [--subsample] [--seed N] [--version V] [--devices auto] [--json OUT] [--keep DIR]
        [--baseline DIR/local-outcomes.json] [--jobs N]

On a GPU machine the baseline is local CuPy (``--sides local,proxy``, the default
there): the same selection, the same subsample, the same GPU. Where no GPU exists
the baseline is NumPy posing as CuPy (``--sides numpy,proxy``) and the proxy runs
on the pool's NumPy device. Each side is its own pytest process over the suite of
the CuPy version under test (``fetch.py``), with CuPy's own pytest configuration;
``--subsample`` sets ``CUPY_TEST_RANDOM_SUBSAMPLE`` on the baseline (about one test
in fifteen of each parametrized group, as CuPy's CI does, and a sample of the dtypes
of ``for_all_dtypes``) and runs exactly the tests the baseline ran on the other side
(with all their dtypes: stricter there, never looser). Prints
the table of ``score.py`` and, with ``--json``, writes it with both sides' outcomes.
The full run (no ``--subsample``) is the figure of record; see docs/fidelity.md.
``--jobs N`` splits each side's test modules into N shards run at once (each its own
pytest process and, on the proxy side, its own embedded pool): on a cold GPU host most
of a side's time is CuPy compiling kernels on one core, which N processes share out.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))   # the repository: the plugin imports from it
sys.path.insert(0, _HERE)
sys.path.insert(0, _ROOT)

from fetch import suite_dir  # noqa: E402  (beside this file)
from score import FOLDERS, score, table  # noqa: E402

#: The CuPy version whose suite runs when no real CuPy is installed here.
DEFAULT_VERSION = "14.2.0"


def local_cupy_version() -> str | None:
    try:
        import cupy
        return cupy.__version__
    except Exception:  # no CuPy, no driver
        return None


def _test_items(path: str, methods: bool) -> list[tuple[int, str]] | None:
    """A module's top-level test classes (with *methods*: their test methods,
    ``Class::method``) with their source sizes; None when the module has top-level test
    functions or classes under ``testing.parameterize`` (which renames them): it then
    runs whole."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return None
    if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
           or isinstance(node, ast.ClassDef)
           and any("parameterize" in ast.unparse(d) for d in node.decorator_list)
           for node in tree.body):
        return None
    items = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            tests = [(len(ast.get_source_segment(text, f) or ""), f"{node.name}::{f.name}")
                     for f in node.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]
            if methods and tests:
                items.extend(tests)
            else:
                items.append((len(ast.get_source_segment(text, node) or ""), node.name))
    return items or None


def shard_modules(source: str, paths: list[str], jobs: int) -> list[list[str]]:
    """*paths* (folders or test modules under tests/) split into at most *jobs* lists of
    test modules of about equal size, largest first (a module's size stands for its run
    time). With fewer modules than jobs, modules made of test classes only are split
    into their classes (``module::Class``), then, if still fewer, their test methods, so that a folder of one slow module (CuPy's
    ``vectorize`` tests compile a kernel per dtype) still runs on all the shards."""
    modules = []
    for path in paths:
        top = os.path.join(source, "tests", path)
        if os.path.isfile(top):
            modules.append((os.path.getsize(top), path))
        for folder, _, files in os.walk(top):
            for name in files:
                if name.startswith("test_") and name.endswith(".py"):
                    full = os.path.join(folder, name)
                    modules.append((os.path.getsize(full),
                                    os.path.relpath(full, os.path.join(source, "tests"))))
    if len(modules) < jobs:   # classes, or their methods if there are still too few
        for methods in (False, True):
            split = []
            for size, module in modules:
                items = _test_items(os.path.join(source, "tests", module), methods)
                split.extend([(n, f"{module}::{i}") for n, i in items] if items else [(size, module)])
            if len(split) >= jobs or methods:
                modules = split
                break
    shards: list[list] = [[0, []] for _ in range(max(1, min(jobs, len(modules))))]
    for size, module in sorted(modules, reverse=True):
        lightest = min(shards, key=lambda shard: shard[0])
        lightest[0] += size
        lightest[1].append(module)
    return [sorted(shard[1]) for shard in shards if shard[1]]


def run_sharded(side: str, source: str, paths: list[str], env_extra: dict, timeout: float,
                work: str, extra_args: list[str], jobs: int) -> dict:
    """:func:`run_side` over *jobs* shards at once; their outcomes merged."""
    if jobs <= 1:
        return run_side(side, source, paths, env_extra, timeout, os.path.join(work, f"{side}.log"),
                        extra_args)
    shards = shard_modules(source, paths, jobs)
    with concurrent.futures.ThreadPoolExecutor(len(shards)) as pool:
        parts = list(pool.map(
            lambda i: run_side(side, source, shards[i], env_extra, timeout,
                               os.path.join(work, f"{side}-{i}.log"), extra_args),
            range(len(shards))))
    merged: dict = {"side": side, "cupy": parts[0].get("cupy"), "outcomes": {}}
    for part in parts:
        merged["outcomes"].update(part["outcomes"])
    merged["complete"] = all(part["complete"] for part in parts)
    merged["seconds"] = max(part["seconds"] for part in parts)
    with open(os.path.join(work, f"{side}-outcomes.json"), "w") as out:   # for --baseline
        json.dump({k: v for k, v in merged.items() if k != "seconds"}, out)
    return merged


def run_side(side: str, source: str, paths: list[str], env_extra: dict, timeout: float,
             log_path: str, extra_args: list[str]) -> dict:
    """One side's pytest run over *paths*; returns the plugin's outcomes."""
    results = log_path.removesuffix(".log") + "-outcomes.json"
    env = {**os.environ, **env_extra, "GPUWB_SUITE_SIDE": side, "GPUWB_SUITE_SOURCE": source,
           "GPUWB_SUITE_RESULTS": results,
           "PYTHONPATH": os.pathsep.join([_ROOT, os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest", "-p", "benchmarks.cupy_suite.plugin",
               "-p", "no:cacheprovider", "-c", os.path.join(source, "pyproject.toml"),
               "--rootdir", source, "-q", "--continue-on-collection-errors",
               "-o", "addopts=--strict-markers", *extra_args, *paths]
    started = time.monotonic()
    with open(log_path, "w") as log:
        try:
            subprocess.run(command, cwd=os.path.join(source, "tests"), env=env, stdout=log,
                           stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            log.write(f"\n[run.py] {side}: stopped after {timeout:.0f} s\n")
    if os.path.exists(results):
        with open(results) as fh:
            outcomes = json.load(fh)
        outcomes["complete"] = True
    elif os.path.exists(results + "l"):   # stopped by the time limit: what it ran
        entries: dict = {}
        with open(results + "l") as fh:
            for line in fh:
                try:
                    nodeid, *entry = json.loads(line)
                except ValueError:   # the last line, cut short
                    continue
                entries[nodeid] = entry
        outcomes = {"side": side, "cupy": None, "outcomes": entries, "complete": False}
    else:
        with open(log_path) as fh:
            tail = fh.read()[-3000:]
        raise RuntimeError(f"the {side} side wrote no results; the end of its log:\n{tail}")
    outcomes["seconds"] = time.monotonic() - started
    return outcomes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    local_version = local_cupy_version()
    parser.add_argument("--sides", default="local,proxy" if local_version else "numpy,proxy",
                        help="baseline,side (default: local,proxy with a GPU, numpy,proxy without)")
    parser.add_argument("--folders", default=",".join(FOLDERS),
                        help="short names (score.FOLDERS) or paths under tests/")
    parser.add_argument("--subsample", action="store_true", help="CUPY_TEST_RANDOM_SUBSAMPLE=1")
    parser.add_argument("--seed", type=int, default=20261123, help="the subsample's seed")
    parser.add_argument("--version", default=None, help="CuPy version of the suite (default: "
                        "the local CuPy's, else " + DEFAULT_VERSION + ")")
    parser.add_argument("--devices", default="auto", help="the embedded pool's devices (proxy side)")
    parser.add_argument("--timeout", default="1800",
                        help="seconds per side (one figure, or baseline,side); a side stopped "
                             "by it is scored on the tests both sides reached")
    parser.add_argument("--test-timeout", type=float, default=120, help="seconds per test")
    parser.add_argument("--baseline", metavar="OUTCOMES",
                        help="the baseline side's outcomes from an earlier run of the same "
                             "selection (its <side>-outcomes.json in --keep): not run again")
    parser.add_argument("--async-errors", action="store_true",
                        help="the proxy's default error mode (raised at the next sync point) "
                             "instead of GPUWB_LAUNCH_BLOCKING's (raised by the call)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="shards of each side run at once (separate processes)")
    parser.add_argument("--json")
    parser.add_argument("--keep", help="a directory for the logs and raw outcomes")
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args(argv)
    version = args.version or local_version or DEFAULT_VERSION
    source = str(suite_dir(version))
    paths = [FOLDERS.get(name.strip(), name.strip()) for name in args.folders.split(",") if name.strip()]
    missing = [p for p in paths if not os.path.exists(os.path.join(source, "tests", p))]
    if missing:
        parser.error(f"not in the CuPy {version} suite: {', '.join(missing)}")
    baseline_side, proxy_side = args.sides.split(",")
    env = {"GPUWB_SUITE_DEVICES": args.devices, "GPUWB_SUITE_BLOCKING": "0" if args.async_errors else "1"}
    if args.subsample:
        env.update(CUPY_TEST_RANDOM_SUBSAMPLE="1", _CUPY_TEST_SUBSAMPLE_SEED=str(args.seed))
    extra = list(args.pytest_args)
    try:
        import pytest_timeout  # noqa: F401
        extra += ["-o", f"timeout={args.test_timeout:g}"]
    except ImportError:
        pass
    work = args.keep or tempfile.mkdtemp(prefix="gpuwb-cupy-suite-")
    os.makedirs(work, exist_ok=True)
    limits = [float(t) for t in args.timeout.split(",")]
    sides = {}
    for side, limit in zip((baseline_side, proxy_side), limits * 2 if len(limits) == 1 else limits):
        side_env = env
        if side == proxy_side and args.subsample:
            # exactly the baseline's subsample: sampling again would pick other tests
            # wherever a module imports on one side only
            only = os.path.join(work, "selected.txt")
            with open(only, "w") as fh:
                fh.write("\n".join(k for k, v in sides[baseline_side]["outcomes"].items()
                                   if v[0] != "collect-error"))
            side_env = {k: v for k, v in env.items() if k != "CUPY_TEST_RANDOM_SUBSAMPLE"}
            side_env["GPUWB_SUITE_ONLY"] = only
        if side == baseline_side and args.baseline:
            with open(args.baseline) as fh:
                sides[side] = {"complete": True, "seconds": 0.0, **json.load(fh)}
            # an earlier run of more folders: only the tests of the folders selected now
            selected = [f"tests/{p.rstrip('/')}" for p in paths]
            if selected:
                sides[side]["outcomes"] = {
                    k: v for k, v in sides[side]["outcomes"].items()
                    if any(k.split("::")[0] == s or k.startswith(s + "/") for s in selected)}
        else:
            sides[side] = run_sharded(side, source, paths, side_env, limit, work, extra, args.jobs)
        print(f"{side}: {len(sides[side]['outcomes'])} outcomes in {sides[side]['seconds']:.0f} s"
              f"{'' if sides[side]['complete'] else ' (stopped by its time limit)'} "
              f"(logs {os.path.join(work, side)}*.log)", flush=True)
    baseline, other = sides[baseline_side], sides[proxy_side]
    if not (baseline["complete"] and other["complete"]):   # only what both sides reached
        reached = set(baseline["outcomes"]) & set(other["outcomes"])
        collect = {k for k, v in other["outcomes"].items() if v[0] == "collect-error"}
        baseline = {**baseline, "outcomes": {k: v for k, v in baseline["outcomes"].items()
                                             if k in reached or k.split("::")[0] in collect}}
    result = score(baseline, other)
    result.update(date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  command=" ".join([os.path.basename(sys.executable)] + sys.argv),
                  suite_version=version, baseline=baseline_side, side=proxy_side,
                  subsample=args.subsample, seed=args.seed if args.subsample else None,
                  errors="async" if args.async_errors else "blocking",
                  complete={name: v["complete"] for name, v in sides.items()},
                  seconds={name: round(v["seconds"], 1) for name, v in sides.items()},
                  paths=paths)
    print(f"CuPy {version} suite, baseline {baseline_side}, through the {proxy_side}"
          + (f", subsample seed {args.seed}" if args.subsample else ""))
    print(table(result))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({**result, "outcomes": {s: v["outcomes"] for s, v in sides.items()}}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
