"""What the real-browser test needs: Debian's chromium, a JupyterLab server of our own.

Playwright's own browser download cannot run on these machines (nor in CI), so the test
drives the system chromium (``/usr/bin/chromium``). Where it is missing and the test
runs as root with apt-get (CI's clean machine), :func:`chromium` installs it; where it
cannot, the test fails with the reason (it never skips quietly).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
#: Flags that let chromium start headless as root on a closed network without stalling
#: on its background connections (update checks, sync, QUIC).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
LAB_EXTENSION = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "gpu-workbench"


def _find_chromium() -> str | None:
    override = os.environ.get("GPUWB_CHROMIUM")
    if override:
        return override
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium() -> str:
    """The system chromium's path, installed with apt-get when missing and possible."""
    found = _find_chromium()
    if found:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise RuntimeError("no chromium on this machine and it cannot be installed here "
                           "(needs apt-get as root): install Debian's chromium package or set "
                           "GPUWB_CHROMIUM to a Chromium binary")
    # The browser tests are in two files, which the test processes may run side by side:
    # one installs, the other waits for it (two apt-gets at once: one fails on dpkg's lock).
    with open(Path(tempfile.gettempdir()) / "gpuwb-chromium-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = _find_chromium()
        return found or _install_chromium()


def _install_chromium() -> str:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log = []
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends",
                                            "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=480)
        log.append(done.stdout[-2000:] + done.stderr[-2000:])
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{log[-1]}")
    found = _find_chromium()
    if not found:
        raise RuntimeError("apt-get installed chromium but no chromium binary is on PATH:\n"
                           + "\n".join(log))
    return found


def lab_extension_built() -> None:
    """Fail with the reason when the prebuilt Lab extension is not installed, or when the
    installed copy is not the latest build (an editable install copies it once)."""
    installed = LAB_EXTENSION / "package.json"
    if not installed.is_file():
        raise RuntimeError(
            f"the JupyterLab extension is not installed at {LAB_EXTENSION}: the install "
            "could not build it (it needs Node.js and npm; see labextension/README.md)")
    built = Path(__file__).resolve().parents[1] / "workbench" / "labextension" / "package.json"
    if built.is_file() and built.read_bytes() != installed.read_bytes():
        raise RuntimeError(f"the installed JupyterLab extension ({LAB_EXTENSION}) is older than "
                           f"the build in {built.parent}: run pip install -e . again")


#: Run code on the current notebook's kernel (not in a cell); resolves to the reply's
#: status ("ok", "error"), the error's name and text, and what the cell wrote to stderr,
#: once the kernel has answered.
RUN_IN_KERNEL = """code => {
  const widget = window.jupyterapp.shell.currentWidget;
  const kernel = widget.sessionContext.session.kernel;
  const future = kernel.requestExecute({ code, store_history: false });
  let stderr = '';
  future.onIOPub = m => {
    if (m.header.msg_type === 'stream' && m.content.name === 'stderr') stderr += m.content.text;
  };
  return future.done.then(
    m => [m.content.status, m.content.ename || '', m.content.evalue || '', stderr]);
}"""


def run_in_kernel(page, code: str) -> str:
    """Run *code* on the kernel of the notebook shown in *page*; its reply's status ("ok"
    or "error", then the error's class and text after a colon)."""
    return run_in_kernel_noting(page, code)[0]


def run_in_kernel_noting(page, code: str) -> tuple[str, str]:
    """:func:`run_in_kernel`'s answer and what the kernel wrote to stderr meanwhile."""
    status, name, text, stderr = page.evaluate(RUN_IN_KERNEL, code)
    return (status if status == "ok" else f"{status}: {name}: {text}"), stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook(path: Path, cells: list[str]) -> Path:
    """A notebook on the "Python 3 (remote GPU)" kernel with *cells* (code)."""
    document = {
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"cell-{i}",
                   "metadata": {}, "outputs": [], "source": source}
                  for i, source in enumerate(cells)],
        "metadata": {"kernelspec": {"name": "remote-gpu", "display_name": "Python 3 (remote GPU)",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    path.write_text(json.dumps(document, indent=1))
    return path


class LabServer:
    """``jupyter lab`` in a child process on a free port, in *root*, with *env* added
    (GPUWB_POOL and its token for the kernels and the server extension). *command* starts
    it another way (``gpuwb lab``, which passes Jupyter's options on); *runtime* is
    Jupyter's runtime directory (default: under *root*)."""

    def __init__(self, root: Path, env: dict[str, str], extension_args: list[str] = (), *,
                 command: list[str] | None = None, runtime: Path | None = None) -> None:
        self.port, self.token = free_port(), "browser-test-token"
        self.root = root
        home = root / ".home"
        self.runtime_dir = runtime or home / "runtime"
        settings = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True, exist_ok=True)   # no news toast over the page
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
        self.log_path = root / "lab.log"
        child_env = {**os.environ, **env, "HOME": str(home),
                     "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
                     "JUPYTER_RUNTIME_DIR": str(self.runtime_dir),
                     "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
        args = [*(command or [sys.executable, "-m", "jupyter", "lab"]), "--no-browser",
                f"--port={self.port}",
                "--ip=127.0.0.1", "--allow-root", f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={root}", "--LabApp.extension_manager=readonly",
                "--LabApp.expose_app_in_browser=True",          # the test runs Lab's commands
                "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                *extension_args]
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(args, env=child_env, stdout=self._log, stderr=subprocess.STDOUT,
                                        cwd=root)
        try:
            self._wait_ready()
        except BaseException:
            self.close()   # no server (nor its kernels) left behind
            raise

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_ready(self, timeout: float = 60.0) -> None:
        """Wait for the server's runtime file, take the port it says, then for an answer.

        The port asked for was free when chosen, but another process (a kernel's or a
        pool's ZeroMQ socket) may bind it before Jupyter does; Jupyter then moves to the
        next free port, and only its runtime file says which (asking the old port would
        reach a ZeroMQ socket and read its greeting as a bad status line)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited ({self.process.returncode}):\n{self.log()}")
            port = self._served_port()
            if port is None:
                time.sleep(0.2)
                continue
            self.port = port
            try:
                urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=1)
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise RuntimeError(f"jupyter lab did not answer within {timeout:g} s:\n{self.log()}")

    def _served_port(self) -> int | None:
        """The port in the server's ``jpserver-*.json`` (None until it is written whole)."""
        for info in self.runtime_dir.glob("jpserver-*.json"):
            try:
                return int(json.loads(info.read_text())["port"])
            except (OSError, ValueError, KeyError):
                return None   # being written
        return None

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text()[-4000:]

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
