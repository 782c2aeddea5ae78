"""``gpuwb status`` and ``%gpu status`` in 80 columns and through a pipe: every table's
header stays on one line (issue 39: "Devic / e"), a narrow form where all columns do not
fit, every column with ``--wide`` and in notebooks' HTML."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import kernelproxy
from workbench.pool_views import status_group
from workbench.views import natural_width, to_text

GPUWB = [sys.executable, "-c", "import sys; from workbench.cli import main; sys.exit(main())"]
G = 1 << 30

NARROW = [["Device", "Name", "Sessions", "Memory", "Spares"],
          ["User", "Device", "Weight", "Target", "Share", "Memory"],
          ["Session", "User", "Device", "Memory", "Idle"]]
WIDE = [["Device", "Name", "Sessions", "Memory used", "Memory total", "Used", "Spare workers"],
        ["User", "Device", "Weight", "Target share", "Share (10 s)", "Waited", "Sessions", "Queued",
         "Memory"],
        ["Session", "User", "Opened by", "Client", "Device", "Memory", "Ops", "Device time",
         "Idle"]]


def busy_status() -> dict:
    """A pool as a busy GPU host shows it: long device names, quotas, queues, clients."""
    users = [("alice", 2, 0.5, 0.4931, True, 3, 12.3 * G, 16 * G),
             ("bob-the-builder", 1, 0.25, 0.2512, False, 0, 1.5 * G, None),
             ("carol", 1, 0.25, 0.2557, False, 12, 700 << 20, 64 * G)]
    return {
        "address": "tcp://gpu-host.example.org:5555", "policy": "fair", "users_mode": "file",
        "local_address": "ipc:///tmp/gpuwb-pool-gpu-host-5555/door", "you": "alice",
        "lease_timeout": 60, "uptime": 264_000,
        "devices": [{"device": f"cuda:{i}", "sessions": 3, "memory_used": 61.3 * G,
                     "spares_ready": 1, "info": {"name": "NVIDIA H100 80GB HBM3",
                                                 "memory_total": 85 * G}} for i in range(2)],
        "users": [{"user": u, "device": "cuda:0", "weight": w, "target_share": t, "share": s,
                   "sessions": 2, "holding": h, "waiting": n, "memory_used": used,
                   "waited": 0.2 if n else None,
                   "memory_quota": quota} for u, w, t, s, h, n, used, quota in users],
        "sessions": [{"session": sid, "user": u, "client": client, "device": "cuda:1",
                      "memory_used": 12.3 * G, "memory_limit": 16 * G, "ops": 1_234_567,
                      "device_seconds": 4000.5, "idle": 75.0,
                      "label": "experiments/2026-11/forgotten-sweep.ipynb" if u == "alice" else ""}
                     for sid, u, client in [("81ccd731dbef3674", "alice", "alice@laptop.example.org"),
                                            ("0000000000000001", "bob-the-builder", "bob@ws12"),
                                            ("0000000000000002", "carol", "carol@node7")]]}


def headers(text: str) -> list[list[str]]:
    """Each table's header cells, asserting that the header took one line (a header word
    broken over lines is what this file is about)."""
    lines, found = text.splitlines(), []
    for i, line in enumerate(lines):
        if line.startswith("┏"):
            end = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("┡"))
            assert end == i + 2, "a header over several lines:\n" + "\n".join(lines[i:end + 1])
            found.append([cell.strip() for cell in lines[i + 1].strip("┃").split("┃")])
    return found


def test_at_80_columns_the_tables_are_narrow_and_whole():
    text = to_text(status_group(busy_status(), mine="81ccd731dbef3674"), width=80)
    assert headers(text) == NARROW, text
    assert max(map(len, text.splitlines())) <= 80, text
    for whole in ("81ccd731dbef3674 (you)", "bob-the-builder", "NVIDIA H100 80GB HBM3",
                  "49.3%", "cuda:1"):
        assert whole in text, whole


def test_wide_shows_every_column_on_one_line():
    # gpuwb status --wide: a console as wide as the widest form (views.natural_width)
    view = status_group(busy_status(), mine="81ccd731dbef3674")
    width = natural_width(view)
    text = to_text(view, width=width)
    assert headers(text) == WIDE, text
    assert "holds the device, 3 waiting" in text and "alice@laptop.example.org" in text
    # where there is room for all of them, the default shows every column too
    assert headers(to_text(status_group(busy_status()), width=width)) == WIDE


def test_notebook_html_keeps_every_column():
    page = status_group(busy_status())._repr_html_()
    for column in WIDE[0] + WIDE[1] + WIDE[2]:
        assert f">{column}</th>" in page, column


@pytest.fixture
def token_file(pool, tmp_path):
    path = tmp_path / "token"
    path.write_text(pool.token)
    return str(path)


def _piped(*args: str) -> str:
    """``gpuwb`` with its output a pipe and no COLUMNS: rich picks its width itself."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    out = subprocess.run([*GPUWB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_piped_status_fits_80_columns(pool, token_file):
    with kernelproxy.connect(pool.address, pool.token):   # a session to show
        text = _piped("status", "--pool", pool.address, "--token-file", token_file)
    assert max(map(len, text.splitlines())) <= 80, text
    assert headers(text) == NARROW, text
    wide = _piped("status", "--pool", pool.address, "--token-file", token_file, "--wide")
    assert headers(wide) == WIDE, wide


def test_gpu_status_in_80_columns(pool):
    """``%gpu status``'s pool part is the same views: whole at 80 columns."""
    with kernelproxy.connect(pool.address, pool.token) as session:
        view = status_group(session.status(), mine=session.id)
    text = to_text(view, width=80)
    assert max(map(len, text.splitlines())) <= 80, text
    assert all(len(h) >= 5 for h in headers(text)), text
    assert f"{session.id} (you)" in text


def test_each_policy_says_how_it_shares_under_the_users_table():
    from workbench.pool_views import users_view
    for policy, words in (("fair", "shared by weight"), ("share", "side by side"),
                          ("fifo", "in the order they came"), ("none", "time-slicing")):
        text = to_text(users_view({**busy_status(), "policy": policy}), width=400)
        assert f"policy {policy}: " in text and words in text, (policy, text)
