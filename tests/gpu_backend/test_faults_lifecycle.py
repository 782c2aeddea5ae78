"""Faults of a session's life: a worker that dies, a pool that is killed, a session dropped.

- A lost session lets go of its sockets and context at once: collecting it later must
  never block (a ZeroMQ context terminated by the collector waits for ever for a socket
  of its own that is still open), least of all inside another, healthy session's call.
- A tcp client learns of its worker's death promptly (its heartbeat asks often; the pool
  knows at once, by the worker's control channel).
- A pool killed with SIGKILL leaves no worker behind, nor its private run directory, and
  a busy client of it gets SessionLostError, never a bare KeyError.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.runtime.run_dir import PREFIX
from gpu_backend.served import ServedPool
from gpu_backend.accounting.usage import read_usage
from kernelproxy.modules import module_for

from tests.hostile import process_state, worker_processes
from tests.waiting import until
from tests.paths import PROJECT_ROOT

ROOT = str(PROJECT_ROOT)


def _run(script: str, timeout: float = 120) -> str:
    """Run *script* in a fresh interpreter; its output (a hang fails the test)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _worker_of(pool: LocalPool, session: kernelproxy.Session):
    return next(w for w in list(pool.door.host.workers.values())
                if w.session is not None and w.session.sid == session.id)


LOST_THEN_COLLECTED = """
    import gc, os, signal, weakref
    import kernelproxy
    from gpu_backend.pool import LocalPool
    from kernelproxy.modules import module_for
    with LocalPool(devices="cpu", lease_timeout=5) as pool:
        lost = kernelproxy.connect(pool.tcp_address, pool.token)
        x = module_for(lost).arange(10.0)
        float(x.sum())
        worker = next(w for w in list(pool.door.host.workers.values())
                      if w.session is not None and w.session.sid == lost.id)
        os.kill(worker.process.pid, signal.SIGKILL)
        try:
            while True:
                float((x + 1).sum())
        except kernelproxy.SessionLostError:
            pass
        healthy = kernelproxy.connect(pool.tcp_address, pool.token)   # as the kernel does
        module_for(healthy)
        gone = weakref.ref(lost)
        del lost, x
        gc.collect()                   # (a context left open here blocked for ever)
        assert gone() is None
        print("healthy", float(module_for(healthy).arange(4.0).sum()))
        healthy.close()
"""


def test_a_lost_tcp_session_is_collected_without_blocking():
    assert "healthy 6.0" in _run(LOST_THEN_COLLECTED)


DROPPED_UNCLOSED = """
    import gc, weakref
    import kernelproxy
    from gpu_backend.pool import LocalPool
    from kernelproxy.modules import module_for
    with LocalPool(devices="cpu", lease_timeout=5) as pool:
        for address in (pool.tcp_address, pool.address):
            dropped = kernelproxy.connect(address, pool.token)
            float(module_for(dropped).arange(3.0).sum())
            other = kernelproxy.connect(address, pool.token)
            module_for(other)
            gone = weakref.ref(dropped)
            del dropped
            gc.collect()
            assert gone() is None
            print("other", float(module_for(other).ones(2).sum()))
            other.close()
"""


def test_a_session_dropped_without_close_is_collected_without_blocking():
    assert _run(DROPPED_UNCLOSED).count("other 2.0") == 2


def test_a_lost_session_has_let_go_of_its_sockets():
    with LocalPool(devices="cpu", lease_timeout=60) as pool:
        session = kernelproxy.connect(pool.tcp_address, pool.token)
        x = module_for(session).arange(5.0)
        float(x.sum())
        os.kill(_worker_of(pool, session).process.pid, signal.SIGKILL)
        with pytest.raises(kernelproxy.SessionLostError):
            while True:
                float((x + 1).sum())
        assert session.link.closed and session.ctx.closed
        assert until(lambda: not session.heartbeat.is_alive(), 10)
        session.close()   # (closing a lost session is harmless)
        # Heartbeat keeps threading.Thread's own methods usable
        assert session.heartbeat.join(1) is None


def test_a_tcp_client_learns_of_its_worker_death_within_seconds():
    """With a 60 s lease the heartbeat used to come every 15 s; the pool knows of the death
    at once, and the client asks every half second."""
    with LocalPool(devices="cpu", lease_timeout=60) as pool:
        with kernelproxy.connect(pool.tcp_address, pool.token) as bystander:
            session = kernelproxy.connect(pool.tcp_address, pool.token)
            float(module_for(session).arange(5.0).sum())
            killed = time.monotonic()
            os.kill(_worker_of(pool, session).process.pid, signal.SIGKILL)
            assert until(lambda: session.heartbeat.lost is not None, 10, step=0.01)
            assert time.monotonic() - killed < 10
            with pytest.raises(kernelproxy.SessionLostError):
                module_for(session).arange(3)
            assert float(module_for(bystander).ones(4).sum()) == 4.0


BUSY_CLIENT = """
    import sys, time
    import kernelproxy
    from kernelproxy.modules import module_for
    session = kernelproxy.connect(sys.argv[1], sys.argv[2])
    cp = module_for(session)
    x = cp.arange(100_000, dtype=cp.float64)
    print("busy", flush=True)
    try:
        while True:
            y = x
            for _ in range(20):
                y = cp.sin(y) + 1.0
            session.result(session.value_later("float", y.sum()))
            float(y[3])
    except kernelproxy.SessionLostError as exc:
        print("SessionLostError", exc, flush=True)
    except BaseException as exc:
        print("other", type(exc).__name__, exc, flush=True)
        raise
"""


def test_a_pool_killed_leaves_no_worker_and_its_busy_clients_get_session_lost(tmp_path):
    pool = ServedPool("fair", "cpu", "--lease-timeout", "20", "--spare-workers", "2")
    clients = []
    try:
        for address in (pool.tcp_address, pool.local_address):
            client = subprocess.Popen([sys.executable, "-c", textwrap.dedent(BUSY_CLIENT), address,
                                       pool.token], cwd=ROOT, stdout=subprocess.PIPE, text=True)
            clients.append(client)
            assert client.stdout.readline().strip() == "busy"
        assert until(lambda: len(worker_processes(pool.pid)) >= 4, 60)   # 2 sessions, 2 spares
        workers = set(worker_processes(pool.pid))
        mine = [d for d in os.listdir("/tmp") if d.startswith(PREFIX) and _owner_pid(d) == pool.pid]
        time.sleep(0.5)   # the clients are mid-batch
        pool.kill()
        assert until(lambda: not any(os.path.exists(f"/proc/{pid}") and
                                     process_state(pid) not in ("Z", None) for pid in workers), 20), \
            [(pid, process_state(pid)) for pid in workers]
        for client in clients:
            out = client.communicate(timeout=60)[0]
            assert "SessionLostError" in out, out
        # the run directory of the dead pool is gone (its workers removed it)
        assert mine and until(lambda: not any(os.path.exists(os.path.join("/tmp", d)) for d in mine), 10)
        read_usage(pool.usage_log)   # the usage log reads after kill -9
    finally:
        for client in clients:
            client.kill()
        pool.stop()


def _owner_pid(name: str) -> int | None:
    try:
        with open(os.path.join("/tmp", name, "owner")) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
