"""The Lab extension as pip installs it (issue 39, item 10): the build ships install.json
beside package.json, so ``jupyter labextension list`` names the Python package that
installed it; and where the install could not build it (no Node.js, which pip does not
report), the Jupyter server says so in its log, with what to do.

The built and installed copies are the ones of this checkout's build (npm, at pip
install); a checkout without them fails here saying so, as the browser test does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

from tests import lab_browser
from tests.paths import PROJECT_ROOT
from workbench import labext_check
from workbench.labext_check import LAB_EXTENSION, lab_extension_problem

pytest_plugins = ("pytest_jupyter.jupyter_server",)

BUILT = PROJECT_ROOT / "workbench" / "labextension"
PACKAGE = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["name"]


def _built() -> None:
    try:
        lab_browser.lab_extension_built()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


def test_the_build_ships_install_json_beside_package_json():
    _built()
    for where in (BUILT, lab_browser.LAB_EXTENSION):
        assert (where / "package.json").is_file(), where
        info = json.loads((where / "install.json").read_text())
        assert info == {
            "packageManager": "python", "packageName": PACKAGE,
            "uninstallInstructions": "Use your Python package manager (pip, conda, etc.) to "
                                     f"uninstall the package {PACKAGE}"}, where
    # one source: labextension/install.json, copied by the build
    assert (BUILT / "install.json").read_bytes() \
        == (PROJECT_ROOT / "labextension" / "install.json").read_bytes()


def test_labextension_list_names_the_python_package():
    _built()
    listed = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"],
                            capture_output=True, text=True, timeout=120)
    lines = [line for line in (listed.stdout + listed.stderr).splitlines()
             if line.strip().startswith(f"{LAB_EXTENSION} ")]
    assert lines and all(f"(python, {PACKAGE})" in line for line in lines), \
        listed.stdout + listed.stderr


def test_a_missing_extension_is_named_with_the_way_to_get_it(tmp_path):
    assert lab_extension_problem([str(lab_browser.LAB_EXTENSION.parent)]) is None or \
        not (lab_browser.LAB_EXTENSION / "package.json").is_file()
    problem = lab_extension_problem([str(tmp_path)])
    assert problem is not None
    for words in ("not installed", "Node.js", "npm", "pip install -e '.[lab]'",
                  "jupyter labextension list", str(tmp_path)):
        assert words in problem, words
    (tmp_path / LAB_EXTENSION).mkdir()
    (tmp_path / LAB_EXTENSION / "package.json").write_text("{}")
    assert lab_extension_problem([str(tmp_path)]) is None


class TestTheServerSaysSo:
    """A Jupyter server (pytest-jupyter, in this process) whose Lab extension directories
    hold no gpu-workbench: its log (stderr, where ``jupyter lab`` prints) says what is
    missing as the extension loads."""

    @pytest.fixture
    def jp_server_config(self, tmp_path, monkeypatch, capfd):   # (capfd: before the server)
        empty = tmp_path / "labextensions"
        empty.mkdir()
        # Jupyter's search path, as a machine whose install had no Node.js would have it
        monkeypatch.setattr(labext_check, "jupyter_path", lambda *parts: [str(empty)])
        monkeypatch.delenv("GPUWB_POOL", raising=False)
        return {"ServerApp": {"jpserver_extensions": {"workbench.jupyter_extension": True}}}

    async def test_the_log_names_the_missing_lab_extension(self, jp_serverapp, capfd):
        logged = capfd.readouterr().err
        warned = [line for line in logged.splitlines()
                  if line.startswith("[W") and "GpuWorkbench" in line]
        assert any("JupyterLab extension is not installed" in line and "Node.js" in line
                   for line in warned), logged[-3000:]
