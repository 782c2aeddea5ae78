"""A local process cannot take over a session by posing as one of the pool's workers.

The attacker reads what any local user can read of a warming worker (its command line and
environment in /proc), connects to every address it finds there under every identity it
offers, and says ``ready`` with a port of its own, racing the real worker. The next hello
must still be served by the real worker, and the impostor must never hear of a session.
"""

from __future__ import annotations

import os
import socket
import struct
import time

import numpy as np

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for

from gpu_backend.worker.unix_listener import MAX_PEERS

from tests.hostile import Impersonator, public_text, unix_sockets, worker_processes
from tests.waiting import until


def test_a_worker_command_line_carries_no_secret_and_no_control_address():
    with LocalPool(devices="cpu", lease_timeout=10, policy="fair") as pool:
        assert until(lambda: worker_processes(os.getpid()), 10)
        with kernelproxy.connect(pool.address, pool.token) as session:
            for pid in worker_processes(os.getpid()):
                text = public_text(pid)
                assert session.key.hex() not in text
                assert pool.token not in text
                assert "--control " not in text and "tcp://" not in text


def test_an_impostor_racing_a_warming_worker_is_never_assigned_a_session():
    with LocalPool(devices="cpu", lease_timeout=10, spare_workers=1, policy="fair") as pool:
        # the spare is importing NumPy and warming up: the attacker is quicker
        assert until(lambda: worker_processes(os.getpid()), 10, step=0.0005)
        impostors = [Impersonator(public_text(pid)) for pid in worker_processes(os.getpid())]
        try:
            for impostor in impostors:
                impostor.say_ready()
            time.sleep(0.2)   # the pool has read what the impostor said, if it listens to it
            session = kernelproxy.connect(pool.address, pool.token, timeout=30)
            try:
                cp = module_for(session)
                assert session.device.get("name") != "hijacked"
                assert not session.worker_address.endswith(f":{impostors[0].port}")
                x = cp.arange(12.0).reshape(3, 4)
                np.testing.assert_array_equal((x * 2).get(), np.arange(12.0).reshape(3, 4) * 2)
                for impostor in impostors:
                    heard = impostor.assigned(0.3)
                    assert not any(m.get("t") == "assign" for m in heard if isinstance(m, dict))
                    assert not any(session.key in (m.get("key"), m.get("k")) for m in heard
                                   if isinstance(m, dict))
            finally:
                session.close()
        finally:
            for impostor in impostors:
                impostor.close()


def test_strangers_on_a_worker_socket_neither_hold_it_nor_lock_its_client_out():
    """A local user finds the warm worker's Unix socket in /proc/net/unix, fills its
    connections with idle ones and leaves half a message on one. The session that the
    worker then serves connects, and its ops are answered, not held behind the half
    message (a peer that has not proved the session key is never waited for)."""
    with LocalPool(devices="cpu", lease_timeout=10, spare_workers=1) as pool:
        ipc_dir = os.path.dirname(pool.local_address.removeprefix("ipc://"))
        assert until(lambda: [p for p in unix_sockets(ipc_dir) if not p.endswith("/door")], 30)
        strangers = []
        try:
            for path in [p for p in unix_sockets(ipc_dir) if not p.endswith("/door")]:
                for i in range(MAX_PEERS + 2):   # (until the listen queue is full)
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    strangers.append(s)
                    s.setblocking(False)
                    try:
                        s.connect(path)
                    except BlockingIOError:
                        break
                    if i == 0:   # a count of one frame of 1000 bytes, and 10 of them
                        s.sendall(struct.pack("<IQ", 1, 1000) + b"x" * 10)
            started = time.monotonic()
            with kernelproxy.connect(pool.address, pool.token, timeout=30) as session:
                assert session.worker_address.startswith("unix://")
                cp = module_for(session)
                for _ in range(3):
                    assert float((cp.arange(10.0) + 1).sum()) == 55.0
                # (held behind the half message, the first op would have waited 60 s)
                assert time.monotonic() - started < 30
        finally:
            for s in strangers:
                s.close()
