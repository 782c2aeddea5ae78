"""The front door's listening socket, kept by the pool across a restart's exec
(gpu_backend/door/listener.py): the port is never free, and a client that connects while
the next pool starts is served by it."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import textwrap

import pytest
import zmq

from gpu_backend.door.listener import LISTEN_FD_ENV, bind_clients

#: the next pool, in a process of its own: it takes the socket back and answers one request
NEXT_POOL = textwrap.dedent("""
    import os, sys, time, zmq
    from gpu_backend.door.listener import LISTEN_FD_ENV, bind_clients
    ctx = zmq.Context()
    clients = ctx.socket(zmq.ROUTER)
    port, kept = bind_clients(clients, "127.0.0.1", int(sys.argv[1]))
    assert kept is not None and port == int(sys.argv[1])
    assert LISTEN_FD_ENV not in os.environ   # (read once: the pool's children never see it)
    deadline = time.monotonic() + 20
    while not clients.poll(100):   # (as the door's loop polls: a tenth of a second at a time)
        assert time.monotonic() < deadline, "the request queued during the restart never came"
    ident, body = clients.recv_multipart()
    clients.send_multipart([ident, body + b" answered"])
    clients.close(linger=2000)
    ctx.term()
""")


def _bind_fails(port: int) -> bool:
    probe = socket.socket()
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("127.0.0.1", port))
    except OSError as exc:
        return exc.errno == errno.EADDRINUSE
    finally:
        probe.close()
    return False


@pytest.fixture
def ctx():
    context = zmq.Context()
    yield context
    context.destroy(linger=0)


def test_the_port_stays_taken_after_libzmq_closes_its_socket_and_the_next_process_serves_it(
        ctx, monkeypatch):
    monkeypatch.delenv(LISTEN_FD_ENV, raising=False)
    old_pool = zmq.Context()
    clients = old_pool.socket(zmq.ROUTER)
    port, kept = bind_clients(clients, "127.0.0.1", 0)
    assert kept is not None and port == kept.port and port > 0
    clients.close(linger=0)              # (as the door's shutdown does before the exec: its
    old_pool.term()                      # context's end closes libzmq's copy for certain)
    assert _bind_fails(port)             # nobody else can take the port meanwhile
    # a client that connects while no pool runs waits in the kept socket's backlog
    client = ctx.socket(zmq.DEALER)
    client.setsockopt(zmq.LINGER, 0)
    client.connect(f"tcp://127.0.0.1:{port}")
    client.send(b"hello")
    kept.pass_on()
    fd = int(os.environ[LISTEN_FD_ENV])
    # (the child gets its own copy of the environment; not monkeypatch.delenv, whose undo
    # put the number back into this process's environment, where the next pool of the
    # test process took it and closed whatever held that number by then: the suite's
    # stray closer, found 2026-11-30)
    os.environ.pop(LISTEN_FD_ENV)
    env = {**os.environ, LISTEN_FD_ENV: str(fd)}
    try:
        done = subprocess.run([sys.executable, "-c", NEXT_POOL, str(port)], env=env,
                              pass_fds=(fd,), capture_output=True, text=True, timeout=60)
    finally:
        kept.close()
    assert done.returncode == 0, done.stderr
    assert client.poll(10000)
    assert client.recv() == b"hello answered"


def test_a_passed_socket_that_listens_elsewhere_is_closed_and_a_new_one_opened(
        ctx, monkeypatch, caplog):
    elsewhere = socket.socket()
    elsewhere.bind(("127.0.0.1", 0))
    elsewhere.listen(1)
    its_port = elsewhere.getsockname()[1]
    given = elsewhere.detach()
    os.set_inheritable(given, True)   # (as a socket passed across an exec is: pass_on)
    monkeypatch.setenv(LISTEN_FD_ENV, str(given))   # (the pool's to close now)
    clients = ctx.socket(zmq.ROUTER)
    port, kept = bind_clients(clients, "127.0.0.2", 0)   # (another loopback address)
    try:
        assert kept is not None and kept.sock.getsockname() == ("127.0.0.2", port)
        assert LISTEN_FD_ENV not in os.environ
        assert "does not listen at" in caplog.text
        with pytest.raises(ConnectionRefusedError):   # (closed: nobody listens there now)
            socket.create_connection(("127.0.0.1", its_port), timeout=10).close()
    finally:
        clients.close(linger=0)
        if kept is not None:
            kept.close()


def test_a_variable_that_names_no_socket_is_ignored(ctx, monkeypatch, caplog):
    monkeypatch.setenv(LISTEN_FD_ENV, "not-a-descriptor")
    clients = ctx.socket(zmq.ROUTER)
    port, kept = bind_clients(clients, "127.0.0.1", 0)
    try:
        assert kept is not None and kept.port == port
        assert "is not a socket this process holds" in caplog.text
        server = ctx.socket(zmq.DEALER)
        server.setsockopt(zmq.LINGER, 0)
        server.connect(f"tcp://127.0.0.1:{port}")
        server.send(b"ping")
        assert clients.poll(10000)
        assert clients.recv_multipart()[1] == b"ping"
    finally:
        clients.close(linger=0)
        if kept is not None:
            kept.close()


def test_an_ipc_bind_after_the_tcp_one_is_not_given_the_tcp_socket(ctx, tmp_path, monkeypatch):
    monkeypatch.delenv(LISTEN_FD_ENV, raising=False)
    clients = ctx.socket(zmq.ROUTER)
    port, kept = bind_clients(clients, "127.0.0.1", 0)
    path = tmp_path / "door"
    try:
        clients.bind(f"ipc://{path}")
        assert path.exists()
        for address in (f"tcp://127.0.0.1:{port}", f"ipc://{path}"):
            peer = ctx.socket(zmq.DEALER)
            peer.setsockopt(zmq.LINGER, 0)
            peer.connect(address)
            peer.send(address.encode())
            assert clients.poll(10000)
            assert clients.recv_multipart()[1] == address.encode()
            peer.close()
    finally:
        clients.close(linger=0)
        kept.close()



def test_a_number_that_crossed_no_exec_is_left_to_whatever_holds_it(ctx, monkeypatch, caplog):
    """A number left in the environment of a process that did not exec (a test's leftover
    once did so) names whatever holds that number now, here a live socket: the pool leaves
    it open and opens its own (closed, it had been a worker's channel or libzmq's)."""
    held = socket.socket()   # (close-on-exec, as every descriptor a process makes)
    monkeypatch.setenv(LISTEN_FD_ENV, str(held.fileno()))
    clients = ctx.socket(zmq.ROUTER)
    try:
        port, kept = bind_clients(clients, "127.0.0.1", 0)
        assert kept is not None and kept.sock.fileno() != held.fileno()
        assert "is not a socket this process holds" in caplog.text
        assert LISTEN_FD_ENV not in os.environ
        os.fstat(held.fileno())   # still open, still the same socket's
        assert held.family == socket.AF_INET and held.getsockname()[1] == 0
    finally:
        clients.close(linger=0)
        if kept is not None:
            kept.close()
        held.close()


def test_the_first_test_leaves_no_number_in_the_environment():
    """After the exec test above, this process's environment names no socket (a number
    left here was the suite's stray closer: the next pool of the process closed it)."""
    assert LISTEN_FD_ENV not in os.environ
