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


class _CountedPoll:
    """select.poll's object, its polls counted (the system calls a message costs)."""

    def __init__(self, poll):
        self._poll, self.polls = poll, 0

    def poll(self, timeout=None):
        self.polls += 1
        return self._poll.poll(timeout)

    def __getattr__(self, name):
        return getattr(self._poll, name)


def test_a_peer_a_poll_found_readable_is_read_without_polling_again_and_only_once(links):
    """A look for work that found the client's message (``poll``) and the read after it
    polled the socket twice for one message; the peer found is now read at once. Once read
    (or dropped), a poll looks again: nothing waits, and a read finds nothing without
    blocking on the empty socket or dropping the client."""
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.connect(links.unix_path)
    send_all(unix, [codec.packb({"t": "auth", "k": KEY})])
    try:
        send_all(unix, [b"u0"])
        assert _read(links) == b"u0"      # (connected and trusted)
        counted = links.unix._poller = _CountedPoll(links.unix._poller)
        for n in range(1, 4):
            send_all(unix, [b"u%d" % n])
            assert _wait_poll(links)
            polls = counted.polls
            assert links.poll(0) and links.poll(0)   # (asked again: the same peer, no poll)
            got = links.recv_message()
            assert got is not None and bytes(got[1][0]) == b"u%d" % n
            assert counted.polls == polls          # (read without a poll of its own)
            assert not links.poll(0)               # (read: the next look polls again)
            assert counted.polls > polls
        started = time.monotonic()
        assert links.recv_message() is None       # (nothing there: no wait on the socket)
        assert time.monotonic() - started < 1.0
        assert len(links.unix.peers) == 1         # (and the client kept)
        send_all(unix, [b"u4"])
        assert _wait_poll(links)
        (peer,) = links.unix.peers.values()
        links.drop(peer)                          # (dropped while found readable)
        assert not links.poll(0)
        assert links.recv_message() is None
    finally:
        unix.close()
