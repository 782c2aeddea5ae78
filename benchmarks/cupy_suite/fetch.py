"""Fetch CuPy's test suite for a CuPy version: the sdist's ``tests/`` and ``cupy/testing``.

    python benchmarks/cupy_suite/fetch.py [VERSION]     # prints the suite's directory

The sdist is downloaded with pip, as CuPy's documentation has it
(``CUPY_INSTALL_USE_STUB=1 pip download cupy==VERSION --no-deps --no-binary
cupy``), into a cache (``$GPUWB_CUPY_SUITE_CACHE``, default
``~/.cache/gpuwb/cupy-suite``); only the two folders are unpacked. Nothing
of it is imported here: the plugin loads ``cupy.testing`` from the unpacked
source when the side under test is not a real CuPy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

__all__ = ["suite_dir", "cache_root"]

#: What of the sdist the suite needs: its tests, the real ``cupy.testing`` and the
#: pytest configuration (markers, warning filters, strict xfail).
_KEEP = ("tests/", "cupy/testing/", "pyproject.toml")


def cache_root() -> Path:
    return Path(os.environ.get("GPUWB_CUPY_SUITE_CACHE")
                or Path.home() / ".cache" / "gpuwb" / "cupy-suite")


def suite_dir(version: str) -> Path:
    """The unpacked suite of CuPy *version* (downloaded on first use): a directory with
    ``tests/``, ``cupy/testing/`` and CuPy's ``pyproject.toml``."""
    root = cache_root()
    target = root / f"cupy-{version}"
    if all((target / part).exists() for part in _KEEP):
        return target
    root.mkdir(parents=True, exist_ok=True)
    archive = root / f"cupy-{version}.tar.gz"
    if not archive.exists():
        env = {**os.environ, "CUPY_INSTALL_USE_STUB": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", f"cupy=={version}", "--no-deps",
             "--no-binary", "cupy", "-d", str(root)],
            env=env, capture_output=True, text=True)
        if done.returncode != 0 or not archive.exists():
            raise RuntimeError(f"could not download the CuPy {version} sdist with pip:\n"
                               f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    prefix = f"cupy-{version}/"
    partial = root / f"cupy-{version}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(target, ignore_errors=True)
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers()
                   if m.name.startswith(prefix) and m.name[len(prefix):].startswith(_KEEP)]
        tar.extractall(partial, members=members, filter="data")
    (partial / f"cupy-{version}").rename(target)
    partial.rmdir()
    return target


if __name__ == "__main__":
    print(suite_dir(sys.argv[1] if len(sys.argv) > 1 else "14.2.0"))
