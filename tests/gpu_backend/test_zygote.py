"""Workers forked by the pool's zygote: what ps shows, exit codes, a zygote killed, one that
cannot start (every worker is then started cold, as before the zygote)."""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.served import ServedPool
from gpu_backend.hosts.pool_workers import BLAS_VARIABLES, WorkerOptions, spawn_worker
from gpu_backend.hosts.zygotes import UNKNOWN_EXIT, ForkedProcess, Zygotes
from kernelproxy.modules import module_for
from tests.hostile import command_line, parent_pid, process_state, worker_processes
from tests.waiting import until


def _worker_of(pool: LocalPool, session: kernelproxy.Session):
    return next(w for w in list(pool.door.host.workers.values())
                if w.session is not None and w.session.sid == session.id)


def _zygote_pids(pool: LocalPool) -> set[int]:
    return set(pool.door.host.zygotes.pids())


def test_a_session_runs_on_a_forked_worker_that_ps_shows_as_a_worker():
    with LocalPool(devices="cpu", lease_timeout=10) as pool, \
            kernelproxy.connect(pool.address, pool.token) as session:
        cp = module_for(session)
        np.testing.assert_array_equal((cp.arange(6.0) * 2).get(), np.arange(6.0) * 2)
        worker = _worker_of(pool, session)
        assert isinstance(worker.process, ForkedProcess)
        assert parent_pid(worker.process.pid) in _zygote_pids(pool)
        # what an operator's ps shows: the worker's own command line, not the zygote's
        assert worker.process.pid in worker_processes(os.getpid())
        title = " ".join(worker_processes(os.getpid())[worker.process.pid])
        assert f"-m gpu_backend.worker --device cpu:0 --run-dir {pool.door.host.run_dir}" in title
        assert f"--id {worker.wid}" in title


def test_a_forked_worker_killed_reports_the_signal_as_popen_would():
    with LocalPool(devices="cpu", lease_timeout=10) as pool:
        session = kernelproxy.connect(pool.address, pool.token)
        process = _worker_of(pool, session).process
        assert process.poll() is None
        process.kill()
        assert process.wait(10) == -signal.SIGKILL
        with pytest.raises(kernelproxy.SessionLostError):
            module_for(session).ones(3).get()
        session.close()


def test_a_killed_zygote_is_replaced_and_its_workers_serve_on():
    with LocalPool(devices="cpu", lease_timeout=10) as pool:
        first = kernelproxy.connect(pool.address, pool.token)
        x = module_for(first).arange(4.0)
        [old] = _zygote_pids(pool)
        os.kill(old, signal.SIGKILL)
        assert until(lambda: process_state(old) in (None, "Z"), 10)
        # the session forked before goes on; new sessions open, on a new zygote's forks
        np.testing.assert_array_equal((x + 1).get(), np.arange(4.0) + 1)
        for _ in range(3):
            with kernelproxy.connect(pool.address, pool.token) as later:
                assert float(module_for(later).ones(5).sum().get()) == 5.0
        assert until(lambda: _zygote_pids(pool) - {old}, 10)
        # the old zygote's worker still ends cleanly: the pool forgets it once it exits
        worker = _worker_of(pool, first)
        first.close()
        assert until(lambda: worker.wid not in pool.door.host.workers, 15)
        assert worker.process.returncode is not None


@pytest.fixture
def broken_env(tmp_path):
    """The pool's environment with a ``gpu_backend`` that fails to import first on the path:
    a zygote started with it ends before it is ready."""
    package = tmp_path / "gpu_backend"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('broken on purpose (test)')\n")
    return {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONSAFEPATH": "1"}   # (not the cwd first)


def test_a_zygote_that_cannot_start_leaves_workers_started_cold(broken_env):
    zygotes = Zygotes()
    run_dir = tempfile.mkdtemp(prefix="gpuwb-test-run-")
    options = WorkerOptions(bind_host="127.0.0.1", run_dir=run_dir)
    threads = str(max(1, min(4, os.cpu_count() or 1)))
    for variable in BLAS_VARIABLES:   # (as spawn_worker sets them for a cpu worker)
        broken_env.setdefault(variable, threads)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        doomed = zygotes.fork(["--device", "cpu"], broken_env, [theirs.fileno(), 1, 2],
                              lambda: ours.fileno() < 0 or bool(select.select([ours], [], [], 0)[0]))
        theirs.close()
        assert ours.recv(16) == b""           # never forked: its channel's other end is gone
        # the request went before the zygote died, and counts as a failed start; or (a
        # loaded machine: the zygote died before this process sent it) it could not go,
        # and the caller was told to start that worker cold
        assert doomed is None or (isinstance(doomed, ForkedProcess)
                                  and doomed.wait(60) == UNKNOWN_EXIT)
        # that kind's zygote is not tried again: the next worker starts as its own process
        worker = spawn_worker("w-cold", "cpu", options, zygotes)
        try:
            assert isinstance(worker.process, subprocess.Popen)
            assert worker.channel.poll(60)
            ready = worker.channel.recv()
            assert ready["t"] == "ready", ready
        finally:
            worker.end()
            worker.process.wait(10)
            worker.channel.close()
    finally:
        ours.close()
        zygotes.close()
        shutil.rmtree(run_dir, ignore_errors=True)



def test_a_served_pool_without_the_zygote_starts_each_worker_as_its_own_process():
    with ServedPool("fair", "cpu", "--no-worker-zygote") as pool:
        with kernelproxy.connect(pool.tcp_address, pool.token) as session:
            assert float(module_for(session).arange(4.0).sum().get()) == 6.0
            workers = worker_processes(pool.pid)
            assert workers and all(parent_pid(pid) == pool.pid for pid in workers)
            children = [int(e) for e in os.listdir("/proc") if e.isdigit() and parent_pid(int(e)) == pool.pid]
            assert not any("gpu_backend.worker.zygote" in command_line(pid) for pid in children)


def test_a_forked_workers_pid_is_there_at_once_as_on_a_popen(tmp_path):
    """Asked before the pool has read the zygote's answer, ``pid`` waits for it."""
    zygotes = Zygotes()
    options = WorkerOptions(bind_host="127.0.0.1", run_dir=str(tmp_path))
    try:
        worker = spawn_worker("w-pid", "cpu", options, zygotes)
        try:
            assert isinstance(worker.process, ForkedProcess)
            pid = worker.process.pid   # (straight after the request)
            assert isinstance(pid, int) and parent_pid(pid) in zygotes.pids()
            assert worker.channel.poll(60) and worker.channel.recv()["t"] == "ready"
            worker.process.kill()
            assert worker.process.wait(10) == -signal.SIGKILL
        finally:
            worker.channel.close()
    finally:
        zygotes.close()
