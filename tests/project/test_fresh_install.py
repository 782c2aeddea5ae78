"""The README's main command, from a fresh virtual environment: install, then ``gpuwb demo``.

Builds and installs the wheel (not an editable checkout), so this also checks
what the wheel ships: the kernelspec, the prebuilt JupyterLab extension and the
server extension's config as shared data, the quickstart notebook, the catalogue's
data file.
"""

import subprocess
import venv

import pytest
from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT


@pytest.mark.timeout(1200)
def test_gpuwb_demo_from_a_fresh_venv(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # (--no-compile: pip's byte-compiling of the ~60 packages installed, a third of the
    # install's time, is not checked here: pip goes on whatever it cannot compile; what
    # the demo imports is compiled as it imports it)
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(ROOT)],
                             capture_output=True, text=True, timeout=1000)
    assert install.returncode == 0, install.stderr[-3000:]
    kernelspec = env_dir / "share" / "jupyter" / "kernels" / "remote-gpu" / "kernel.json"
    assert kernelspec.is_file()
    share = env_dir / "share" / "jupyter"   # the prebuilt Lab extension and the server's
    assert (share / "labextensions" / "gpu-workbench" / "package.json").is_file()
    assert (env_dir / "etc" / "jupyter" / "jupyter_server_config.d" / "gpu_workbench.json").is_file()
    demo = subprocess.run([str(env_dir / "bin" / "gpuwb"), "demo", "--devices", "cpu"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "In [1]: import numpy as np" in demo.stdout
    assert "GPU time of the cell" in demo.stdout and "usage:" in demo.stdout
    catalog = subprocess.run([str(env_dir / "bin" / "gpuwb"), "catalog", "show", "rcuda"],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert catalog.returncode == 0 and "Universidad Politécnica de Valencia" in catalog.stdout
