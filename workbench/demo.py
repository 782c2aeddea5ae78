"""``gpuwb demo``: ordinary CuPy code on the embedded local pool, end to end.

Starts a pool in this process (a GPU if CuPy sees one, else the NumPy
device), opens a session, installs the ``cupy`` import hook and runs a short
tour whose every line executes in a session worker process.
"""

from __future__ import annotations

import inspect
import time

import kernelproxy
from gpu_backend.pool import LocalPool

from .tour import tour

__all__ = ["run_demo"]

def run_demo(devices: str = "auto") -> int:
    started = time.perf_counter()
    with LocalPool(devices=devices, lease_timeout=30.0) as pool:
        session = kernelproxy.connect(pool.address, pool.token)
        device = session.device
        print(f"pool on {pool.address}; session {session.id} on {device.get('name')} "
              f"({device.get('kind')} device)")
        print(f"connected in {time.perf_counter() - started:.2f} s\n")
        kernelproxy.install(session)
        try:
            print(inspect.getsource(tour))
            tour()
            session.sync()
            status = session.status()
        finally:
            kernelproxy.uninstall()
            session.close()
    devices = ", ".join(f"{d['device']} ({d['sessions']} session)" for d in status["devices"])
    print(f"\nusage: {session.ops_issued} ops issued, worker busy {session.worker_seconds * 1e3:.1f} ms, "
          f"total {time.perf_counter() - started:.2f} s; pool devices: {devices}")
    return 0
