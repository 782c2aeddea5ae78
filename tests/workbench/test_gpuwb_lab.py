"""``gpuwb lab`` as a user runs it: a real ``gpuwb lab`` process, its real Jupyter server
and a real remote-GPU kernel (issue 39, items 1-4).

- Jupyter's own options pass through as ``jupyter lab`` takes them (no bare ``--``).
- Nothing shared is written: the environment's kernelspec stays as installed.
- Plain ``gpuwb lab`` runs one pool for the server and all its kernels (the server's status
  shows it, and a kernel's session is on it), which ends with the server.
- SIGTERM stops the server, its kernels and the pool.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from tests import lab_browser
from tests.waiting import until
from workbench.lab_launcher import split_arguments

GPUWB = [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]


def test_jupyters_options_pass_through_as_typed():
    args, rest = split_arguments([
        "--no-browser", "--port", "8899", "--pool", "tcp://gpu-host:5555", "--token-file",
        "-odd-path", "--devices", "cpu", "--ServerApp.root_dir=/srv", "--", "--debug",
        "--pool", "p"])
    assert args.pool == "tcp://gpu-host:5555" and args.token_file == "-odd-path"
    assert args.devices == "cpu"
    # after a bare "--" (the old way), everything is Jupyter's, as typed
    assert rest == ["--no-browser", "--port", "8899", "--ServerApp.root_dir=/srv", "--debug",
                    "--pool", "p"]
    args, rest = split_arguments(["--port=8899", "--po", "x"])   # no abbreviations of ours
    assert args.pool is None and rest == ["--port=8899", "--po", "x"]


class _Lab(lab_browser.LabServer):
    """``gpuwb lab ARGS`` in a child process with a home of its own, on a free port."""

    def __init__(self, root: Path, *args: str) -> None:
        # a short runtime directory, as a user's is: the kernels' Unix sockets live there
        self.runtime = Path(tempfile.mkdtemp(prefix="gwl-"))
        super().__init__(root, {}, command=[*GPUWB, "lab", *args], runtime=self.runtime)

    def get(self, path: str) -> dict:
        try:
            with urllib.request.urlopen(f"{self.url}{path}?token={self.token}",
                                        timeout=10) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:   # 503: the pool is down, with a body
            return json.loads(exc.read())

    def post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(
            f"{self.url}{path}?token={self.token}", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=60) as reply:
            return json.loads(reply.read())

    def server_pid(self) -> int:
        info = next(self.runtime.glob("jpserver-*.json"))
        return json.loads(info.read_text())["pid"]

    def close(self) -> None:
        if self.process.poll() is None:
            super().close()
        else:
            self._log.close()
        shutil.rmtree(self.runtime, ignore_errors=True)


def _installed_kernelspec() -> bytes:
    spec = KernelSpecManager().get_kernel_spec("remote-gpu")
    return (Path(spec.resource_dir) / "kernel.json").read_bytes()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return [pid for pid in found if pid != os.getpid() and _alive(pid)]


def _no_pool_in(monkeypatch) -> None:
    for name in ("GPUWB_POOL", "GPUWB_TOKEN", "GPUWB_TOKEN_FILE", "GPUWB_CLIENT_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def test_plain_gpuwb_lab_runs_one_pool_for_the_server_and_its_kernels(tmp_path, monkeypatch):
    _no_pool_in(monkeypatch)
    spec_before = _installed_kernelspec()
    lab = _Lab(tmp_path, "--devices", "cpu")
    try:
        assert until(lambda: lab.get("/gpuwb/api/status")["state"] == "ok", seconds=60, step=0.2), lab.log()
        status = lab.get("/gpuwb/api/status")
        assert status["pool"].startswith(("ipc://", "tcp://127.0.0.1"))
        assert status["status"]["sessions"] == []
        kernel = lab.post("/api/kernels", {"name": "remote-gpu"})
        # the kernel opens its session on the server's pool (not an embedded one of its own)
        assert until(lambda: len(lab.get("/gpuwb/api/status").get("status", {})
                                 .get("sessions", [])) == 1, seconds=90, step=0.2), lab.log()
        assert _installed_kernelspec() == spec_before   # nothing shared was rewritten
        server = lab.server_pid()
        kernels = _processes_mentioning(f"kernel-{kernel['id']}")
        assert kernels, "the kernel's process was not found"
        lab.process.send_signal(signal.SIGTERM)
        assert lab.process.wait(90) == 0, lab.log()
        assert until(lambda: not _alive(server) and not any(map(_alive, kernels)), seconds=30, step=0.1)
        assert not _processes_mentioning(str(lab.runtime))
        log = lab.log()
        assert "a pool of this server's own" in log
        # its kernels talk to the server over Unix sockets only this user reaches, and
        # ipykernel's plain-text warning is gone (it was printed at every kernel start)
        assert "without encryption" not in log and "transport=ipc" not in log
    finally:
        lab.close()


def test_gpuwb_lab_on_a_given_pool_binds_no_shared_kernelspec(pool, tmp_path, monkeypatch):
    _no_pool_in(monkeypatch)
    token = tmp_path / "token"
    token.write_text(pool.token)
    spec_before = _installed_kernelspec()
    lab = _Lab(tmp_path, "--pool", pool.address, "--token-file", str(token))
    try:
        assert until(lambda: lab.get("/gpuwb/api/status")["state"] == "ok", seconds=60, step=0.2), lab.log()
        assert lab.get("/gpuwb/api/status")["pool"] == pool.address
        assert _installed_kernelspec() == spec_before
        assert "a pool of this server's own" not in lab.log()
    finally:
        lab.close()
    assert _installed_kernelspec() == spec_before


def test_a_token_file_that_cannot_be_read_is_refused_before_the_server_starts(tmp_path):
    out = subprocess.run([*GPUWB, "lab", "--pool", "tcp://127.0.0.1:9", "--token-file",
                          str(tmp_path / "missing")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--token-file" in out.stderr, out.stderr
    out = subprocess.run([*GPUWB, "lab", "--token-file", "x"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and "go with --pool" in out.stderr, out.stderr
