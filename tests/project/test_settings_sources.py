"""Where settings come from: each process kind reads the ``GPUWB_*`` environment in one
place (the pool's PoolSettings, the kernel's ClientSettings, a session's SessionSettings,
a worker's WorkerSettings, and the command lines that name a file), never inside the
parts that run ops; and what those readers make of the variables."""

from __future__ import annotations

import ast

import pytest

from gpu_backend.worker.settings import WorkerSettings
from kernelproxy.settings import SessionSettings
from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT

#: the modules that may read the environment, and why
READERS = {
    "kernelproxy/settings.py": "a session's settings",
    "gpu_backend/worker/settings.py": "a worker's settings (read once in its main)",
    "gpu_backend/config.py": "the pool's settings (pydantic-settings reads GPUWB_*; the TOML file's name)",
    "gpu_backend/protocol/curve.py": "the known-pools file's place ($GPUWB_KNOWN_POOLS)",
    "gpu_backend/accounting/usage.py": "the usage log's default place ($XDG_STATE_HOME)",
    "gpu_backend/cli_usage.py": "its --log default ($GPUWB_USAGE_LOG)",
    "gpu_backend/cli_users.py": "its --file default ($GPUWB_USERS_FILE)",
    "gpu_backend/hosts/pool_workers.py": "a worker's environment is its pool's",
    "gpu_backend/worker/zygote.py": "a forked worker takes the environment its pool sent",
    "gpu_backend/served.py": "a served pool's environment is its starter's",
    "workbench/lab_launcher.py": "gpuwb lab hands its environment, with its pool, to Jupyter",
    "kernelproxy/random/_generator.py": "CuPy's own CUPY_SEED, read as CuPy reads it",
    "workbench/demo.py": "the demo's kernels get the embedded pool's address",
    "gpu_backend/door/listener.py": "the listening socket a restart passes across its exec "
                                    "($GPUWB_LISTEN_FD, set just before it, read once after)",
}


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines that touch ``os.environ`` or call ``os.getenv``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") \
                and isinstance(node.value, ast.Name) and node.value.id == "os":
            lines.append(node.lineno)
    return lines


def test_only_the_settings_modules_read_the_environment():
    found = {}
    for package in ("kernelproxy", "gpu_backend", "workbench", "catalog"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            lines = _reads_environment(ast.parse(path.read_text(), rel))
            if lines and rel not in READERS:
                found[rel] = lines
    assert not found, f"read the environment outside the settings modules: {found}"


def test_every_listed_reader_still_reads_it():
    stale = [rel for rel in READERS
             if not _reads_environment(ast.parse((ROOT / rel).read_text(), rel))]
    assert not stale, f"listed as readers but read nothing: {stale}"


def test_session_settings_from_the_environment():
    assert SessionSettings.from_environ({}) == SessionSettings()
    assert SessionSettings() == SessionSettings(launch_blocking=False, staging=True, eager_flush=True)
    got = SessionSettings.from_environ({"GPUWB_LAUNCH_BLOCKING": "1", "GPUWB_STAGING": "0",
                                        "GPUWB_EAGER_FLUSH": "off"})
    assert got == SessionSettings(launch_blocking=True, staging=False, eager_flush=False)
    # empty means unset: the default, not "off"
    assert SessionSettings.from_environ({"GPUWB_STAGING": "", "GPUWB_LAUNCH_BLOCKING": " "}) \
        == SessionSettings()


def test_worker_settings_from_the_environment():
    assert WorkerSettings.from_environ({}) == WorkerSettings()
    got = WorkerSettings.from_environ({"GPUWB_WORKER_PHASES": "/tmp/p", "GPUWB_PACING_LEAD_US": "600",
                                       "GPUWB_STREAM_BYTES": "4096", "GPUWB_PACING_TRACE": ""})
    assert got.phases_dir == "/tmp/p" and got.pacing_trace_dir is None and got.profile_dir is None
    assert got.pacing_lead == pytest.approx(600e-6) and got.stream_bytes == 4096
    assert got.share_lead is None
    assert WorkerSettings.from_environ({"GPUWB_SHARE_LEAD_US": "4000"}).share_lead == pytest.approx(4e-3)


def test_spinning_waits_yield_unless_told_not_to():
    """``GPUWB_SPIN_YIELD=0`` (protocol/spinning.py): a session's and a worker's spins keep
    the CPU; by default they yield it at each turn."""
    import os as _os
    from gpu_backend.protocol import spinning
    assert SessionSettings().spin_yield and WorkerSettings().spin_yield
    assert not SessionSettings.from_environ({"GPUWB_SPIN_YIELD": "0"}).spin_yield
    assert not WorkerSettings.from_environ({"GPUWB_SPIN_YIELD": "off"}).spin_yield
    assert WorkerSettings().graphed_draws   # (GPUWB_GRAPHED_DRAWS: worker/eager_ops.py)
    assert not WorkerSettings.from_environ({"GPUWB_GRAPHED_DRAWS": "0"}).graphed_draws
    assert spinning.pause_for(True) is _os.sched_yield
    assert spinning.pause_for(False) is not _os.sched_yield and spinning.pause_for(False)() is None
    before = spinning.pause
    try:
        spinning.set_yielding(False)
        assert spinning.pause is spinning.pause_for(False)
    finally:
        spinning.pause = before


def test_a_pacer_keeps_its_lead_and_the_default_records_no_phases():
    from gpu_backend.devices.numpy_device import NumpyDevice
    from gpu_backend.worker.pacing import LEAD, Pacer
    from gpu_backend.worker.phases import NO_PHASES, PhaseClock

    device = NumpyDevice()
    assert Pacer(device).lead == LEAD and Pacer(device).trace is None
    assert Pacer(device, lead=600e-6, trace=True).lead == 600e-6
    from gpu_backend.worker.pacing import SHARE_LEAD
    assert Pacer(device).share_lead == SHARE_LEAD and Pacer(device, share_lead=4e-3).share_lead == 4e-3
    NO_PHASES.start(slept=True)
    NO_PHASES.mark("received")
    NO_PHASES.end()
    clock = PhaseClock("")
    clock.start(slept=False)
    clock.mark("received")
    clock.mark("run")
    clock.end()
    summary = clock.summary()
    assert summary["messages"] == 1 and set(summary["median_us"]) == {"received", "run"}
