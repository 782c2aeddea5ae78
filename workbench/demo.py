"""``gpuwb demo``: the quickstart notebook, run through the remote-GPU kernel.

Starts an embedded pool in this process (a GPU if CuPy sees one, else the
NumPy device), points the kernel at it, executes ``quickstart.ipynb`` with
nbclient and prints every cell with its outputs, then a usage summary from
the pool.
"""

from __future__ import annotations

import os
import time
from importlib import resources
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from gpu_backend.pool import LocalPool

from .kernelspec import KERNEL_NAME, kernel_json, kernel_manager_options

__all__ = ["run_demo", "quickstart_path"]


def quickstart_path() -> Path:
    """The notebook: shipped in the wheel, or examples/ in a source checkout."""
    packaged = resources.files("workbench").joinpath("examples", "quickstart.ipynb")
    if packaged.is_file():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[1] / "examples" / "quickstart.ipynb"


def _text_of(output: dict) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return output.get("text", "")
    if kind == "error":
        return f"{output.get('ename')}: {output.get('evalue')}\n"
    data = output.get("data", {})
    return data.get("text/plain", "[output without a text form]") + "\n"


def run_demo(devices: str = "auto", notebook: Path | None = None) -> int:
    started = time.perf_counter()
    path = notebook or quickstart_path()
    nb = nbformat.read(path, as_version=4)
    with LocalPool(devices=devices, lease_timeout=60.0) as pool:
        print(f"gpu-workbench demo: embedded pool on {pool.address}, devices {pool.door.devices}")
        print(f"running {path.name} through the '{KERNEL_NAME}' kernel\n")
        env = {**os.environ, "GPUWB_POOL": pool.address, "GPUWB_TOKEN": pool.token,
               "GPUWB_POOL_OWNER": "gpuwb demo's process (it ends with the demo)"}
        client = NotebookClient(nb, timeout=600, kernel_name=KERNEL_NAME,
                                resources={"metadata": {"path": str(path.parent)}})
        client.km = client.km or client.kernel_manager_class(kernel_name=KERNEL_NAME,
                                                             **kernel_manager_options())
        # run our kernel with this interpreter, whatever kernelspec is installed where
        client.km.kernel_spec.argv = kernel_json()["argv"]
        client.execute(env=env)
        status = pool.door.status()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        print(f"In [{cell.get('execution_count')}]: " + cell.source.replace("\n", "\n    ...: "))
        for output in cell.get("outputs", []):
            print(_text_of(output), end="")
        print()
    ended = status.get("ended", [])
    ops = sum(s.get("ops") or 0 for s in ended + status.get("sessions", []))
    print(f"usage: {len(ended)} session(s) ended, {ops} ops run in the pool; "
          f"total {time.perf_counter() - started:.1f} s")
    return 0
