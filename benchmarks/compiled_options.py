"""What compiling the hot paths would buy (issue 8: "msgspec, Cython or a C extension for
the codec and the dispatch loop are all fair choices; measure each").

    python benchmarks/compiled_options.py [--device cpu] [--pairs 3] [--json out.json]

1. **msgspec vs msgpack** for what crosses the wire per op: the op's two records
   (``[seq, kind, want, out, name]`` and ``[target, [handle, 1.0], {}]``, the handle an
   extension type as our codec sends it) encoded and decoded, and a sync batch's reply
   encoded. Skipped when msgspec is not installed (it is not a dependency).
2. **The worker's modules compiled unchanged by Cython** (``executor``, ``handles``,
   ``codec``, ``pacing`` and the device module): a copy of the repository is built in a
   temporary directory and ``worker_micro.py``'s "through Executor" figure is taken
   from it and from the repository itself in alternating pairs. Skipped without
   Cython or a C compiler.

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


def _executor_us(tree: str, device: str) -> float:
    done = subprocess.run([sys.executable, os.path.join(tree, "benchmarks", "worker_micro.py"),
                           "--device", device], capture_output=True, text=True, timeout=600, cwd=tree)
    found = re.search(r"through Executor\s+([\d.]+)", done.stdout)
    if not found:
        raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
    return float(found.group(1))


def cython_figures(device: str, pairs: int) -> dict | None:
    try:
        import Cython  # noqa: F401
    except ImportError:
        return None
    if not shutil.which(os.environ.get("CC", "cc")):
        return None
    with tempfile.TemporaryDirectory(prefix="gpuwb-cython-") as tree:
        for part in ("gpu_backend", "kernelproxy", "benchmarks"):
            shutil.copytree(os.path.join(ROOT, part), os.path.join(tree, part),
                            ignore=shutil.ignore_patterns("__pycache__", "results"))
        modules = COMPILED + [DEVICE_MODULES["cuda" if device.startswith("cuda") else "cpu"]]
        build = ("from setuptools import setup\nfrom Cython.Build import cythonize\n"
                 f"setup(ext_modules=cythonize({modules!r}, quiet=True, compiler_directives="
                 "{'language_level': 3, 'binding': True, 'annotation_typing': False}))\n")
        with open(os.path.join(tree, "setup.py"), "w") as fh:
            fh.write(build)
        subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=tree,
                       check=True, capture_output=True, timeout=900)
        compiled, pure = [], []
        for _ in range(pairs):
            compiled.append(_executor_us(tree, device))
            pure.append(_executor_us(ROOT, device))
    return {"modules": modules, "executor_us_compiled": compiled, "executor_us_pure": pure}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda:K (worker_micro's device)")
    parser.add_argument("--pairs", type=int, default=3, help="alternating compiled/pure runs")
    parser.add_argument("--json")
    args = parser.parse_args()
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/compiled_options.py " + " ".join(sys.argv[1:]),
              "python": sys.version.split()[0], "device": args.device,
              "codec": codec_figures(), "cython": cython_figures(args.device, args.pairs)}
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
        for pure, compiled in zip(cython["executor_us_pure"], cython["executor_us_compiled"]):
            print(f"{'3-op batch through Executor, us':34} {pure:12.1f} {compiled:12.1f}")
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
