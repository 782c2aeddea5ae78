"""The ``gpuwb`` command, run as a user would (a subprocess)."""

import json
import os
import subprocess
import sys

import pytest

GPUWB = [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]


def run(*args, timeout=120):
    return subprocess.run([*GPUWB, *args], capture_output=True, text=True, timeout=timeout)


def test_demo_runs_the_quickstart_through_the_kernel():
    out = run("demo", "--devices", "cpu", timeout=300)
    assert out.returncode == 0, out.stderr
    assert "In [1]: import numpy as np" in out.stdout
    assert "array([0., 1., 2., 3., 4., 5., 6., 7., 8., 9.], dtype=float32)" in out.stdout
    assert "ValueError: operands could not be broadcast" in out.stdout   # the tagged error cell
    assert "skipped: custom CUDA kernels need a GPU" in out.stdout       # NumPy device
    assert "GPU time of the cell" in out.stdout and "TGS" in out.stdout
    assert "usage: 1 session(s) ended" in out.stdout
    # issue 39 item 13: what %gpu status shows is true: the pool runs in the demo's process,
    # and the kernel runs over Unix sockets (ipykernel's TCP warning is gone)
    assert "runs in        gpuwb demo's process" in out.stdout
    assert "without encryption" not in out.stdout + out.stderr


def test_catalog_subcommand():
    out = run("catalog", "show", "reef")
    assert out.returncode == 0, out.stderr
    assert "Microsecond-scale Preemption" in out.stdout
    bad = run("catalog", "show", "Gemni")
    assert bad.returncode == 2 and "gpuwb catalog" in bad.stderr and "gemini" in bad.stderr.lower()


def test_status_of_a_running_pool(pool, tmp_path):
    token = tmp_path / "token"
    token.write_text(pool.token)
    out = run("status", "--pool", pool.address, "--token-file", str(token), "--json")
    assert out.returncode == 0, out.stderr
    assert '"devices"' in out.stdout and pool.address in out.stdout
    assert json.loads(out.stdout)["you"] == "default"
    table = run("status", "--pool", pool.address, "--token-file", str(token))
    assert table.returncode == 0, table.stderr
    for shown in ("GPU pool status", "Devices", "Users", "Target", "Share", "policy share"):
        assert shown in table.stdout, shown   # (piped: 80 columns, test_status_width.py)
    wide = run("status", "--pool", pool.address, "--token-file", str(token), "--wide")
    assert "Target share" in wide.stdout and "Share (10 s)" in wide.stdout, wide.stdout


@pytest.mark.parametrize("args", [[], ["frobnicate"]])
def test_bad_usage_exits_2(args):
    assert run(*args).returncode == 2


def test_install_kernel_into_a_prefix_bound_to_a_pool(tmp_path):
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    out = run("install-kernel", "--prefix", str(tmp_path), "--name", "gpu-lab",
              "--display-name", "Lab GPU", "--pool", "tcp://gpu-host:5555", "--token-file", str(token))
    assert out.returncode == 0, out.stderr
    import json
    spec = json.loads((tmp_path / "share/jupyter/kernels/gpu-lab/kernel.json").read_text())
    assert spec["display_name"] == "Lab GPU" and spec["language"] == "python"
    assert spec["argv"][1:3] == ["-m", "workbench.kernel"] and spec["interrupt_mode"] == "signal"
    assert spec["env"] == {"GPUWB_POOL": "tcp://gpu-host:5555", "GPUWB_TOKEN_FILE": str(token.resolve())}


def test_lab_without_jupyterlab_says_how_to_get_it(tmp_path):
    """The test extra installs JupyterLab, so its absence is made: a `jupyterlab` first on
    the path that fails to import, as a missing one does."""
    shim = tmp_path / "jupyterlab"
    shim.mkdir()
    (shim / "__init__.py").write_text("raise ImportError(\"No module named 'jupyterlab'\")\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([*GPUWB, "lab"], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 2 and "gpu-workbench[lab]" in out.stderr, out.stderr
