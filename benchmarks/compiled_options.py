"""What compiling the hot paths would buy (issue 8: "msgspec, Cython or a C extension for
the codec and the dispatch loop are all fair choices; measure each").

    python benchmarks/compiled_options.py [--device cpu] [--pairs 3] [--json out.json]

1. **msgspec vs msgpack** for what crosses the wire per op: the op's two records
   (``[seq, kind, want, out, name]`` and ``[target, [handle, 1.0], {}]``, the handle an
   extension type as our codec sends it) encoded and decoded, and a sync batch's reply
   encoded. Skipped when msgspec is not installed (it is not a dependency).
2. **The worker's modules compiled unchanged by Cython** (``executor``, ``handles``,
   ``codec``, ``pacing`` and the device module): a copy of the repository is built in a
   temporary directory and ``worker_micro.py``'s figures (a 3-op sync batch through
   ``Executor.run_batch``; ``x = x + 1`` per op in 512-op batches) are taken from it and
   from the repository itself in alternating rounds. Skipped without Cython or a C
   compiler.
3. **The op loop with C types** (``benchmarks/compiled/op_loop.pyx``, built into the same
   copy; ``GPUWB_TYPED_LOOP=1`` makes ``Executor._run_ops`` the compiled loop there): the
   same figures, a third variant in each round.
4. **The client's modules compiled unchanged too** (``kernelproxy/session.py``,
   ``kernelproxy/ndarray.py``, in a second copy), with the typed loop: the fourth variant,
   ``typed+client``. It differs from ``typed`` only in the end-to-end figures.
5. With ``--overhead``, each variant also runs ``overhead.py``'s hot sync and pipelined
   rows over ``ipc://`` (pool and client from that variant's tree), beside local CuPy on
   a GPU; with ``--programs``, ``programs.py``'s four programs over ``ipc://``.

Prints a table, then one JSON object (also written to --json). Figures are the host's:
docs/performance.md says which host each came from.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

COMPILED = ["gpu_backend/worker/executor.py", "gpu_backend/worker/handles.py",
            "gpu_backend/protocol/codec.py", "gpu_backend/worker/pacing.py"]
DEVICE_MODULES = {"cpu": "gpu_backend/devices/numpy_device.py",
                  "cuda": "gpu_backend/devices/cupy_device.py"}


def best_ns(fn, calls: int = 200_000, rounds: int = 5) -> float:
    for _ in range(2000):
        fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e9)
    return best


def codec_figures() -> dict | None:
    try:
        import msgspec
    except ImportError:
        return None
    from gpu_backend.protocol import codec

    handle = codec.Handle(1)
    quad = struct.Struct("<Q")
    packer = codec.make_packer()
    hook = codec.ext_hook_for(None)
    encoder = msgspec.msgpack.Encoder(
        enc_hook=lambda obj: msgspec.msgpack.Ext(codec.EXT_HANDLE, quad.pack(int(obj))))
    decoder = msgspec.msgpack.Decoder(ext_hook=lambda code, data: codec.Handle(quad.unpack(data)[0]))
    head, body = [7, "o", "a", 12, "add"], [None, [handle, 1.0], {}]
    reply = {"b": 1, "m": b"\x90", "v": [[3, 1.0]], "d": [], "e": None, "w": [], "x": 3, "s": 0}
    ours = packer.pack(head) + packer.pack(body)
    assert ours == encoder.encode(head) + encoder.encode(body), "the two codecs disagree"
    h, b = packer.pack(head), packer.pack(body)
    import msgpack
    return {
        "msgspec": msgspec.__version__, "msgpack": ".".join(map(str, msgpack.version)),
        "encode_op_ns": [best_ns(lambda: (packer.pack(head), packer.pack(body))),
                         best_ns(lambda: (encoder.encode(head), encoder.encode(body)))],
        "decode_op_ns": [best_ns(lambda: (codec.unpackb(h), msgpack.unpackb(b, ext_hook=hook))),
                         best_ns(lambda: (decoder.decode(h), decoder.decode(b)))],
        "encode_reply_ns": [best_ns(lambda: packer.pack(reply)), best_ns(lambda: encoder.encode(reply))],
    }


#: Appended to the copy's executor.py: the compiled op loop replaces the Python one when
#: GPUWB_TYPED_LOOP=1 (in the worker processes too: they inherit the environment).
TYPED_SWITCH = """
import os as _os
if _os.environ.get("GPUWB_TYPED_LOOP") == "1":
    from .op_loop import run_ops as _typed_run_ops
    Executor._run_ops = _typed_run_ops
"""
VARIANTS = ("pure", "cython", "typed", "typed+client")
CLIENT_MODULES = ["kernelproxy/session.py", "kernelproxy/ndarray.py"]


def _env(tree: str, typed: bool) -> dict:
    """The environment of one variant: its tree first on the path (worker processes too)."""
    env = dict(os.environ, GPUWB_TYPED_LOOP="1" if typed else "0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tree, os.environ.get("PYTHONPATH")) if p)
    return env


def _micro(tree: str, device: str, typed: bool) -> dict:
    done = subprocess.run([sys.executable, os.path.join(tree, "benchmarks", "worker_micro.py"),
                           "--device", device], capture_output=True, text=True, timeout=600,
                          cwd=tree, env=_env(tree, typed))
    batch = re.search(r"through Executor\s+([\d.]+)", done.stdout)
    chain = re.search(r"chain, per op: through Executor ([\d.]+) us, library alone ([\d.]+)",
                      done.stdout)
    if not (batch and chain):
        raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
    return {"batch_us": float(batch.group(1)), "chain_us_per_op": float(chain.group(1)),
            "chain_library_us_per_op": float(chain.group(2))}


def _run_json(tree: str, typed: bool, script: str, *args: str) -> dict:
    """One of *tree*'s benchmarks, run as that variant; the JSON it writes."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        done = subprocess.run([sys.executable, os.path.join(tree, "benchmarks", script), *args,
                               "--json", out.name], capture_output=True, text=True, timeout=600,
                              cwd=tree, env=_env(tree, typed))
        if done.returncode:
            raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
        with open(out.name) as fh:
            return json.load(fh)


def _overhead(tree: str, device: str, typed: bool) -> dict:
    """overhead.py's hot sync and pipelined rows over ipc:// from *tree*."""
    result = _run_json(tree, typed, "overhead.py", "--devices", "cpu" if device == "cpu" else "auto",
                       "--transports", "ipc", "--gemm", "0", "--transfer-mb", "8",
                       "--transfer-reps", "1", "--idle-reps", "0", "--latency-reps", "2000",
                       "--pipelined-ops", "10000")
    proxy, local = result["proxy_ipc"], result.get("local") or {}
    figures = {"sync_us": proxy["sync_small_op"]["median_us"],
               "sync_worker_us": proxy["sync_small_op"].get("worker_us"),
               "pipelined_op_s": proxy["pipelined_small_ops"]["ops_per_s"],
               "raw_rtt_us": result["raw_zmq"]["ipc"]["rtt_small_us"]}
    if local:
        figures["local_sync_us"] = local["sync_small_op"]["median_us"]
        figures["local_pipelined_op_s"] = local["pipelined_small_ops"]["ops_per_s"]
    return figures


def _programs(tree: str, device: str, typed: bool) -> dict:
    """programs.py's four programs over ipc:// from *tree*: each one's ratio to local."""
    result = _run_json(tree, typed, "programs.py", "--devices", "cpu" if device == "cpu" else "auto",
                       "--transports", "ipc", "--rounds", "3", *(["--quick"] if device == "cpu" else []))
    return {f"{name}_vs_local": row["proxy_ipc"]["vs_local"]
            for name, row in result["programs"].items()}


def _build(tree: str, modules: list[str]) -> None:
    build = ("from setuptools import setup\nfrom Cython.Build import cythonize\n"
             f"setup(ext_modules=cythonize({modules!r}, quiet=True, compiler_directives="
             "{'language_level': 3, 'binding': True, 'annotation_typing': False}))\n")
    with open(os.path.join(tree, "setup.py"), "w") as fh:
        fh.write(build)
    built = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"],
                           cwd=tree, capture_output=True, text=True, timeout=900)
    if built.returncode:
        raise RuntimeError(built.stdout[-3000:] + built.stderr[-3000:])


def cython_figures(device: str, pairs: int, overhead: bool, programs: bool) -> dict | None:
    try:
        import Cython  # noqa: F401
    except ImportError:
        return None
    if not shutil.which(os.environ.get("CC", "cc")):
        return None
    with tempfile.TemporaryDirectory(prefix="gpuwb-cython-") as base:
        tree, client_tree = os.path.join(base, "worker"), os.path.join(base, "client")
        for part in ("gpu_backend", "kernelproxy", "benchmarks"):
            shutil.copytree(os.path.join(ROOT, part), os.path.join(tree, part),
                            ignore=shutil.ignore_patterns("__pycache__", "results"))
        modules = COMPILED + [DEVICE_MODULES["cuda" if device.startswith("cuda") else "cpu"]]
        shutil.copy(os.path.join(ROOT, "benchmarks", "compiled", "op_loop.pyx"),
                    os.path.join(tree, "gpu_backend", "worker", "op_loop.pyx"))
        with open(os.path.join(tree, "gpu_backend", "worker", "executor.py"), "a") as fh:
            fh.write(TYPED_SWITCH)
        _build(tree, modules + ["gpu_backend/worker/op_loop.pyx"])
        shutil.copytree(tree, client_tree, ignore=shutil.ignore_patterns("build"))
        _build(client_tree, CLIENT_MODULES)
        trees = {"pure": (ROOT, False), "cython": (tree, False), "typed": (tree, True),
                 "typed+client": (client_tree, True)}
        rounds = []
        for turn in range(pairs):   # each round in a rotated order: drift falls on all four
            order = VARIANTS[turn % 4:] + VARIANTS[:turn % 4]
            row = {}
            for variant in order:
                where, typed = trees[variant]
                row[variant] = _micro(where, device, typed)
                if overhead:
                    row[variant].update(_overhead(where, device, typed))
                if programs:
                    row[variant].update(_programs(where, device, typed))
                print(f"round {turn + 1} {variant}: {json.dumps(row[variant])}", flush=True)
            rounds.append(row)
    return {"modules": modules, "client_modules": CLIENT_MODULES, "rounds": rounds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda:K (worker_micro's device)")
    parser.add_argument("--pairs", type=int, default=3,
                        help="rounds of the four variants, each round in a rotated order")
    parser.add_argument("--overhead", action="store_true",
                        help="also overhead.py's hot sync and pipelined rows per variant")
    parser.add_argument("--programs", action="store_true",
                        help="also programs.py's four programs per variant")
    parser.add_argument("--json")
    args = parser.parse_args()
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/compiled_options.py " + " ".join(sys.argv[1:]),
              "python": sys.version.split()[0], "device": args.device,
              "codec": codec_figures(),
              "cython": cython_figures(args.device, args.pairs, args.overhead, args.programs)}
    print(f"{'what':34} {'current':>12} {'compiled':>12}")
    codec = result["codec"]
    if codec is None:
        print("msgspec not installed: codec comparison skipped")
    else:
        for key in ("encode_op_ns", "decode_op_ns", "encode_reply_ns"):
            ours, theirs = codec[key]
            print(f"{key + ' (msgpack | msgspec)':34} {ours:12.0f} {theirs:12.0f}")
    cython = result["cython"]
    if cython is None:
        print("Cython or a C compiler missing: compiled worker skipped")
    else:
        print(f"\n{'round / figure':34} " + " ".join(f"{v:>12}" for v in VARIANTS))
        for turn, row in enumerate(cython["rounds"]):
            for key in row["pure"]:
                cells = " ".join(f"{row[v].get(key) or float('nan'):12.{3 if 'vs' in key else 1}f}"
                                 for v in VARIANTS)
                print(f"{f'{turn + 1}: {key}':34} {cells}")
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
