"""A worker whose control channel hangs up while its pool runs on leaves the pool's run
directory alone.

A worker's watchdog takes a hang-up of its control channel for its pool's end (a pool
killed cannot remove its own directory, so its workers do). In the suite, a descriptor
closed twice in the pool's process once closed the pool's end of a worker's channel: the
worker removed the directory of a pool that ran on, and every later worker of that pool
failed to start (no baton, no arbiter socket). The worker now removes it only when the
directory's owner, the pool's process, has gone (gpu_backend.runtime.run_dir.owner_alive);
test_faults_lifecycle checks that a pool killed still has its directory removed."""

from __future__ import annotations

import os
import socket

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for

from tests.waiting import until


def test_a_hung_up_channel_in_a_running_pool_leaves_its_run_directory():
    with LocalPool(devices="cpu", spare_workers=1, lease_timeout=30.0) as pool:
        hosts = pool.door.host   # (its own host: the workers and the run directory)
        assert until(lambda: any(w.channel is not None for w in list(hosts.workers.values())),
                     60, step=0.02)
        worker = next(w for w in list(hosts.workers.values()) if w.channel is not None)
        baton = os.path.join(hosts.run_dir, "baton")
        assert os.path.exists(baton)
        # the pool's end of the channel, broken as a stray close of its number would
        worker.channel.sock.shutdown(socket.SHUT_RDWR)
        assert until(lambda: worker.process.poll() is not None, 30, step=0.02)   # it ended
        assert os.path.exists(baton)
        with kernelproxy.connect(pool.address, pool.token) as session:   # a later worker
            assert float(module_for(session).ones(4).sum()) == 4.0
