"""Ctrl-C held over a session's send/receive blocks, and never lost in a finalizer."""

import signal
import time

import pytest

from kernelproxy.interrupts import InterruptGuard


@pytest.fixture
def guard():
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    guard = InterruptGuard()
    guard.install()
    yield guard
    signal.signal(signal.SIGINT, previous)


def test_sigint_inside_a_block_is_raised_when_the_block_ends(guard):
    done = []
    with pytest.raises(KeyboardInterrupt):
        with guard:
            signal.raise_signal(signal.SIGINT)
            done.append("rest of the block")
    assert done == ["rest of the block"] and not guard.pending and guard.depth == 0


def test_sigint_outside_a_block_is_raised_at_once(guard):
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
        time.sleep(5)


def test_sigint_landing_in_a_finalizer_is_delivered_again(guard):
    """A remote array's __del__ runs on every dropped array: an interrupt raised there
    would be swallowed ("Exception ignored") and the user's loop would run on."""
    class Dropped:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)  # Python runs the handler inside __del__
            sum(range(1000))

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        Dropped()        # dropped at once: its __del__ takes the SIGINT
        time.sleep(5)    # a Python stretch after it: the redelivered SIGINT stops it
    assert time.monotonic() - started < 2
