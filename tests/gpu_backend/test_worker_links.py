"""The worker's client links (worker/links.py) read as one: a same-host client's Unix socket
and ZeroMQ's ROUTER, with real sockets. A poll looks first at the link the last message came
by (a look at ZeroMQ's socket is a system call of its own); whichever is looked at first,
every message on either link is found and read, and a poll with nothing waiting says so."""

from __future__ import annotations

import socket
import time

import pytest
import zmq

from gpu_backend.protocol import codec
from gpu_backend.protocol.framing import send_all
from gpu_backend.worker.links import open_links

KEY = b"k" * 32


@pytest.fixture
def links(tmp_path):
    ctx = zmq.Context()
    links = open_links(ctx, "127.0.0.1", unix_path=str(tmp_path / "worker.sock"))
    links.key = KEY
    yield links
    links.close()
    ctx.term()


def _wait_poll(links, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if links.poll(0):
            return True
        time.sleep(0.001)
    return False


def _read(links) -> bytes:
    assert _wait_poll(links)
    got = links.recv_message()
    while got is None:   # (a connection accepted, or its key taken: no message yet)
        assert _wait_poll(links)
        got = links.recv_message()
    return bytes(got[1][0])


def test_messages_on_both_links_are_all_read_whichever_came_last(links, tmp_path):
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.connect(links.unix_path)
    send_all(unix, [codec.packb({"t": "auth", "k": KEY})])
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(f"tcp://127.0.0.1:{links.port}")
    try:
        send_all(unix, [b"u1"])
        assert _read(links) == b"u1"
        assert links._unix_first          # (the next poll looks at the Unix peers first)
        dealer.send(b"z1")
        assert _read(links) == b"z1"     # (found behind the Unix peers, which had nothing)
        assert not links._unix_first
        dealer.send(b"z2")
        send_all(unix, [b"u2"])
        time.sleep(0.05)
        assert {_read(links), _read(links)} == {b"z2", b"u2"}
        send_all(unix, [b"u3"])
        dealer.send(b"z3")
        time.sleep(0.05)
        assert {_read(links), _read(links)} == {b"z3", b"u3"}
        assert not links.poll(0)         # nothing left on either
    finally:
        dealer.close()
        unix.close()
