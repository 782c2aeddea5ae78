"""An op's error as the user meets it (issue 39): out of memory names the user's quota and
their usage against it, and the traceback is the user's own line, then the message and
the note naming the op, with none of the client's frames: in a plain script and in
IPython. A real pool with a memory quota on the NumPy device."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys

import pytest
from IPython.core.interactiveshell import InteractiveShell

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for
from kernelproxy.tracebacks import user_traceback
from tests.gpu_backend.test_users_pool import eventually, write_users
from tests.paths import PROJECT_ROOT

MiB = 1 << 20
QUOTA = 64 * MiB   # granted in steps of 4 MiB: an error naming the grant would say so

#: The README's way, then an op past the quota whose error is raised at a later line.
SCRIPT = """\
import sys
import kernelproxy
session = kernelproxy.connect(sys.argv[1], sys.argv[2])
kernelproxy.install(session)
import cupy as cp
x = cp.ones(5 * 1024 * 1024)            # 40 MiB of dana's 64
y = x + 1                               # 40 MiB more: past the quota
print(float(y.sum()))
"""


@pytest.fixture(scope="module")
def quota_pool(tmp_path_factory):
    path = tmp_path_factory.mktemp("tracebacks") / "users.toml"
    tokens = write_users(path, {"dana": {"memory": QUOTA}})
    with LocalPool(devices="cpu", users_file=path, lease_timeout=30) as pool:
        yield pool, tokens["dana"]


def _quota_free(pool) -> None:
    """Wait until no session of dana's is open: the script of the test before ended its
    session by exiting, which the pool learns within seconds, and until then that session's
    40 MiB count against the quota (a loaded machine once ran the next test meanwhile)."""
    eventually(lambda: not any(s.user == "dana" for s in list(pool.door.sessions.values())),
               timeout=60)


def _quota_text(text: str) -> None:
    """The quota and the usage against it, never the grant (a step of 4 MiB)."""
    assert re.search(r"Out of memory allocating 41,943,040 bytes: user dana's memory quota is "
                     r"64 MiB over all their sessions: this session uses 4[01](\.\d)? MiB", text), text


def test_a_script_sees_its_own_line_then_the_quota(quota_pool, tmp_path):
    pool, token = quota_pool
    script = tmp_path / "past_quota.py"
    script.write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(script), pool.address, token], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):", out.stderr
    assert lines[1] == f'  File "{script}", line 8, in <module>', out.stderr
    assert lines[2].strip() == "print(float(y.sum()))", out.stderr
    assert "kernelproxy" not in out.stderr and "gpu_backend/" not in out.stderr, out.stderr
    message = next(i for i, line in enumerate(lines) if "OutOfMemoryError: " in line)
    _quota_text(lines[message])
    assert lines[message + 1] == f"raised by operator +, issued at {script}:7", out.stderr


def test_the_error_is_cupys_class_and_keeps_every_frame_when_caught(quota_pool):
    pool, token = quota_pool
    _quota_free(pool)
    with kernelproxy.connect(pool.address, token) as session:
        cp = module_for(session)
        x = cp.ones(5 * MiB)
        with pytest.raises(cp.cuda.memory.OutOfMemoryError) as caught:
            float((x + 1).sum())
        _quota_text(str(caught.value))
        # the program's own handling sees every frame; only what is shown is trimmed
        frames = []
        tb = caught.value.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame.f_code.co_filename)
            tb = tb.tb_next
        assert any("kernelproxy" in f for f in frames)
        kept = user_traceback(caught.value.__traceback__)
        assert kept is not None and kept.tb_next is None and kept.tb_frame.f_code.co_filename == __file__
        # still an exception that pickles (its note and its class travel)
        again = pickle.loads(pickle.dumps(caught.value))
        assert type(again) is type(caught.value) and str(again) == str(caught.value)
        del caught
        assert float(x.sum()) == 5 * MiB   # the session goes on


def test_ipython_shows_the_cells_line_and_not_ours(quota_pool, capsys):
    pool, token = quota_pool
    _quota_free(pool)   # (the test before's session closed: its end reaches the pool meanwhile)
    shell = InteractiveShell.instance()
    shell.colors = "nocolor"
    try:
        with kernelproxy.connect(pool.address, token) as session:
            shell.user_ns["cp"] = module_for(session)
            shell.run_cell("x = cp.ones(5 * 1024 * 1024)\ny = x + 1\nprint(float(y.sum()))")
            shown = capsys.readouterr().out
    finally:
        InteractiveShell.clear_instance()
    assert "----> 3 print(float(y.sum()))" in shown, shown
    assert "kernelproxy" not in shown and "skipping hidden" not in shown, shown
    _quota_text(shown)
    assert shown.index("----> 3") < shown.index("OutOfMemoryError: ") < shown.index("raised by operator +")
