"""The control channel between the pool and a worker keeps a worker's last words.

A worker told to stop just as it ends by itself (its client closed the session) exits
with the pool's ``stop`` unread. Linux then fails the pool's next read once with
ECONNRESET, ahead of the records the worker sent before it closed: its ``ended``, with the
session's last usage figures. The channel reads on past that error. (Seen first across
hosts, where a ``stop`` relayed through a host agent came late often enough to lose about
one session's last report in twenty.)
"""

from __future__ import annotations

import pytest

from gpu_backend.worker.control import ControlChannel, ControlClosed


def test_a_peer_that_closes_with_our_message_unread_still_has_its_last_words_read():
    ours, theirs = ControlChannel.pair()
    worker = ControlChannel(theirs)
    try:
        ours.send({"t": "stop"})                       # never read by the worker
        worker.send({"t": "usage", "ops": 2})
        worker.send({"t": "ended", "reason": "closed by the client", "ops": 3})
        worker.sock.close()
        assert ours.recv() == {"t": "usage", "ops": 2}
        assert ours.recv() == {"t": "ended", "reason": "closed by the client", "ops": 3}
        with pytest.raises(ControlClosed):
            ours.recv()
    finally:
        ours.sock.close()


def test_a_peer_that_closes_with_nothing_to_say_is_a_closed_channel():
    ours, theirs = ControlChannel.pair()
    worker = ControlChannel(theirs)
    try:
        ours.send({"t": "stop"})
        worker.sock.close()
        with pytest.raises(ControlClosed):
            ours.recv()
    finally:
        ours.sock.close()
