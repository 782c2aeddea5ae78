"""``gpuwb-backend serve --listen``, through the real command line: a malformed address is
refused in one line with exit status 2, whatever is wrong with it (an IPv6 address
without its brackets printed pydantic's traceback and exited 1); an IPv4-mapped IPv6
address in brackets is an address ZeroMQ binds, and the pool serves on it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

import kernelproxy
from kernelproxy.modules import module_for

from tests.paths import PROJECT_ROOT


def _serve(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpu_backend.cli", "serve", "--devices", "cpu", *args]


def _environment() -> dict[str, str]:
    """This process's environment without the pool's own variables (a GPUWB_LISTEN of the
    machine's must not stand in for the option)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GPUWB_")}


@pytest.mark.parametrize("address, hint", [
    # IPv6 without brackets: the case, and its like
    ("tcp://::ffff:127.0.0.1:0", "tcp://[::ffff:127.0.0.1]:0"),
    ("tcp://::1:5555", "tcp://[::1]:5555"),
    # what was refused with a traceback as well
    ("tcp://[1:2:3]:0", None),            # brackets round no IPv6 address
    ("tcp://[::ffff:127.0.0.1]", None),   # no port
    ("tcp://127.0.0.1:99999", None),
    ("tcp://localhost", None),
    ("ipc:///tmp/door", None),
])
def test_a_malformed_listen_address_is_refused_in_one_line_with_status_2(address, hint, tmp_path):
    done = subprocess.run(_serve("--listen", address, "--usage-log", str(tmp_path / "u.jsonl")),
                          capture_output=True, text=True, timeout=60, cwd=PROJECT_ROOT,
                          env=_environment())
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == "", done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("gpuwb-backend serve: listen must look like tcp://HOST:PORT"), line
    assert repr(address) in line, line
    if hint is not None:
        assert f"did you mean {hint}?" in line, line


def test_an_environment_variable_malformed_is_refused_in_one_line_too(tmp_path):
    done = subprocess.run(_serve("--usage-log", str(tmp_path / "u.jsonl")), capture_output=True,
                          text=True, timeout=60, cwd=PROJECT_ROOT,
                          env={**_environment(), "GPUWB_LEASE_TIMEOUT": "soon"})
    assert done.returncode == 2, (done.returncode, done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.startswith("gpuwb-backend serve: lease_timeout: "), line


def test_an_ipv4_mapped_loopback_address_in_brackets_serves(tmp_path):
    """``tcp://[::ffff:127.0.0.1]:0``: bound with the socket's IPV6 option, and loopback
    (so no key file is needed), for the front door, its workers and a client."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::ffff:127.0.0.1", 0))
    except OSError:
        pytest.skip("this host cannot bind an IPv4-mapped IPv6 address")
    token = tmp_path / "token"
    token.write_text("mapped-token\n")
    proc = subprocess.Popen(_serve("--listen", "tcp://[::ffff:127.0.0.1]:0", "--token-file",
                                   str(token), "--usage-log", str(tmp_path / "u.jsonl"),
                                   "--no-same-host"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=PROJECT_ROOT, env={**_environment(), "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        assert "listening on tcp://[::ffff:127.0.0.1]:" in line, (line, proc.stderr.read()
                                                                  if proc.poll() is not None else "")
        address = line.split()[4]
        with kernelproxy.connect(address, "mapped-token", timeout=60) as session:
            assert session.worker_address.startswith("tcp://[::ffff:127.0.0.1]:")
            assert float(module_for(session).arange(5).sum()) == 10.0
    finally:
        proc.terminate()
        assert proc.wait(15) == 0
