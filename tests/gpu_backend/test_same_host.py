"""The same-host transport: a pool's ipc:// door, and a Unix socket to each worker,
chosen by the address the client is given."""

import os
import stat
import subprocess
import sys

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.errors import AuthenticationError
from gpu_backend.security import generate_keypair
from kernelproxy.modules import module_for


@pytest.fixture(scope="module")
def pool():
    with LocalPool(devices="cpu") as pool:
        yield pool


@pytest.mark.parametrize("door", ["ipc", "tcp"])
def test_the_address_chooses_the_transport_of_the_whole_session(pool, door):
    address = pool.address if door == "ipc" else pool.tcp_address
    assert address.startswith(f"{door}://")
    session = kernelproxy.connect(address, pool.token)
    try:
        assert session.worker_address.startswith("unix://" if door == "ipc" else "tcp://")
        cp = module_for(session)
        big = np.random.default_rng(0).random(300_000)       # a zero-copy frame each way
        x = cp.asarray(big)
        assert float((x + 1).sum()) == pytest.approx(float((big + 1).sum()))
        assert np.array_equal(cp.asnumpy(x * 2), big * 2)
    finally:
        session.close()


def test_the_sockets_are_for_this_host_and_go_with_the_pool():
    pool = LocalPool(devices="cpu").start()
    directory = pool.door.ipc_dir
    door = pool.address.removeprefix("ipc://")
    try:
        assert os.path.dirname(door) == directory
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o711   # searchable, not listable
        assert stat.S_ISSOCK(os.stat(door).st_mode)
        session = kernelproxy.connect(pool.address, pool.token)
        worker = session.worker_address.removeprefix("unix://")
        assert os.path.dirname(worker) == directory and stat.S_ISSOCK(os.stat(worker).st_mode)
        assert pool.door.status()["local_address"] == pool.address
        session.close()
    finally:
        pool.stop()
    assert not os.path.exists(directory)


def test_a_pool_restarted_on_its_port_keeps_its_same_host_address():
    first = LocalPool(devices="cpu").start()
    address, tcp = first.address, first.tcp_address
    first.stop()
    again = LocalPool(devices="cpu", listen=tcp).start()
    try:
        assert again.address == address
        session = kernelproxy.connect(address, again.token)
        session.close()
    finally:
        again.stop()


def test_a_wrong_token_on_the_same_host_door_is_refused(pool):
    with pytest.raises(AuthenticationError, match="token"):
        kernelproxy.connect(pool.address, "not-the-token", timeout=10)


def test_an_encrypted_pool_encrypts_its_same_host_door_too(tmp_path):
    secret, _public_file, public = generate_keypair(tmp_path / "pool.key")
    with LocalPool(devices="cpu", key_file=secret) as pool:
        assert pool.address == pool.tcp_address                  # clients are given tcp://
        local = pool.door.local_address
        with pytest.raises(AuthenticationError):
            kernelproxy.connect(local, pool.token, server_key=None, timeout=10)
        session = kernelproxy.connect(local, pool.token, server_key=public)
        try:
            assert session.worker_address.startswith("unix://")
            assert int(module_for(session).arange(5).sum()) == 10
        finally:
            session.close()


def test_served_pool_prints_its_same_host_address(tmp_path):
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    for extra, expected in (([], True), (["--no-same-host"], False)):
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpu_backend.cli", "serve", "--listen", "tcp://127.0.0.1:0",
             "--devices", "cpu", "--token-file", str(token), "--usage-log", str(tmp_path / "u.jsonl"),
             *extra], stdout=subprocess.PIPE, text=True)
        try:
            assert "listening on tcp://" in proc.stdout.readline()
            line = proc.stdout.readline()
            assert line.startswith("clients on this host: ipc://") == expected, line
            if expected:
                session = kernelproxy.connect(line.split()[-1], "t0ken")
                assert session.worker_address.startswith("unix://")
                session.close()
        finally:
            proc.terminate()
            proc.wait(20)


def test_big_messages_both_ways_at_once_do_not_deadlock(pool):
    """The client writes a large upload while the worker writes a large reply to it: the
    worker reads while it writes, so both complete (a Unix socket holds ~200 KB)."""
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    session = kernelproxy.connect(pool.address, pool.token)
    try:
        assert session.worker_address.startswith("unix://")
        cp = module_for(session)
        first = cp.asarray(np.arange(5_000_000, dtype=np.float64))        # 40 MB up
        seq = session.submit(m.KIND_DOWNLOAD, api.VALUE, None, None, first, (), {}, label="get")
        session.flush()                                                    # 40 MB coming down
        second = cp.asarray(np.full(5_000_000, 3.0))                       # 40 MB up meanwhile
        down = session.value(seq)
        assert down[-1] == 4_999_999 and down.shape == (5_000_000,)
        assert float(second.sum()) == 15_000_000.0
    finally:
        session.close()


def test_garbage_on_a_worker_socket_drops_that_connection_only(pool):
    import socket
    import struct
    session = kernelproxy.connect(pool.address, pool.token)
    try:
        cp = module_for(session)
        x = cp.arange(10)
        path = session.worker_address.removeprefix("unix://")
        for garbage in (struct.pack("<I", 0), struct.pack("<I", 1 << 30), b"\xff" * 3,
                        struct.pack("<IQ", 1, 1 << 50)):
            stray = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            stray.connect(path)
            stray.sendall(garbage)
            stray.close()
        stray = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)   # a well-framed message
        stray.connect(path)                                           # with no session key:
        from gpu_backend.protocol.framing import send_all            # dropped, unanswered
        from gpu_backend.protocol.codec import packb
        send_all(stray, [packb({"k": b"wrong", "b": 1, "n": 0})])
        stray.settimeout(30)
        assert stray.recv(1) == b""
        stray.close()
        assert int((x * 2).sum()) == 90                                # the session goes on
    finally:
        session.close()


def test_a_worker_that_dies_is_a_lost_session(pool):
    import signal as signals
    from gpu_backend.protocol.errors import SessionLostError
    session = kernelproxy.connect(pool.address, pool.token)
    cp = module_for(session)
    x = cp.arange(10)
    assert int(x.sum()) == 45
    worker = next(w for w in list(pool.door.host.workers.values())
                  if w.session is not None and w.session.sid == session.id)
    os.kill(worker.process.pid, signals.SIGKILL)
    worker.process.wait(10)
    with pytest.raises(SessionLostError):
        int((x + 1).sum())
    session.close()
