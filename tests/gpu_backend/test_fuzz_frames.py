"""Fuzzing the pool: 10 000 seeded frames at the front door, 10 000 batches at a worker.

Every frame is answered (one reply each, an error class from the closed table, never a
plain MemoryError), and afterwards a bystander's session, opened before, is intact and
works, as does the fuzzed session itself (the worker fuzz holds that session's key, as
its own hostile user would: what it breaks of that session is its own). ``benchmarks/attack.py`` runs ten times as many.
"""

from __future__ import annotations

import socket

import numpy as np
import pytest
import zmq

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol import codec, framing
from gpu_backend.protocol.errors import ERROR_CLASSES
from kernelproxy.modules import build_modules, module_for

from tests.hostile import door_fuzz_frames, worker_fuzz_batches

FRAMES = 10_000
IN_FLIGHT = 64   # frames sent ahead of their replies (pipelined, as a hostile client would)
#: ... at the door, more: refusals of sign-ins that must wait are held until the wait is over
DOOR_IN_FLIGHT = 512


@pytest.fixture(scope="module")
def fuzz_pool():
    with LocalPool(devices="cpu", lease_timeout=30, memory_limit=64 << 20) as pool:
        bystander = kernelproxy.connect(pool.address, pool.token)
        kept = module_for(bystander).arange(100.0)
        float(kept.sum())
        yield pool, bystander, kept
        np.testing.assert_array_equal(kept.get(), np.arange(100.0))
        assert float(module_for(bystander).ones(7).sum()) == 7.0
        bystander.close()


def _pipelined(sock: zmq.Socket, messages: list[list[bytes]],
               in_flight: int = IN_FLIGHT) -> list[list[bytes]]:
    """Send *messages* on a DEALER with *in_flight* outstanding; every reply (in the order
    they came)."""
    replies, sent = [], 0
    while len(replies) < len(messages):
        while sent < len(messages) and sent - len(replies) < in_flight:
            sock.send_multipart(messages[sent])
            sent += 1
        assert sock.poll(30_000), f"no reply to frame {len(replies)} of {len(messages)}"
        replies.append(sock.recv_multipart())
    return replies


def test_the_front_door_answers_every_fuzzed_frame(fuzz_pool):
    pool, bystander, _kept = fuzz_pool
    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(pool.tcp_address)
        replies = _pipelined(sock, door_fuzz_frames(seed=11, count=FRAMES), DOOR_IN_FLIGHT)
    finally:
        ctx.destroy(linger=0)
    errors = set()
    for reply in replies:
        assert len(reply) == 1
        msg = codec.unpackb(reply[0])
        assert isinstance(msg, dict) and isinstance(msg.get("ok"), bool)
        if not msg["ok"]:
            name, text = msg["error"]
            assert name in ERROR_CLASSES and name != "MemoryError" and isinstance(text, str)
            errors.add(name)
    assert {"ProtocolError", "AuthenticationError"} <= errors
    assert float(module_for(bystander).arange(4.0).sum()) == 6.0


@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_a_worker_answers_every_fuzzed_batch(fuzz_pool, transport):
    pool, bystander, _kept = fuzz_pool
    address = pool.tcp_address if transport == "tcp" else pool.address
    victim = kernelproxy.connect(address, pool.token)
    try:
        float(module_for(victim).arange(10.0).sum())
        batches = worker_fuzz_batches(seed=17 + (transport == "unix"), count=FRAMES // 2,
                                      key=victim.key)
        # a last empty batch acknowledges the fuzz's errors, which were the session's own
        batches.append([codec.packb({"k": victim.key, "b": 2 * 10**6, "n": 0, "r": 2**64 - 1})])
        if transport == "tcp":
            ctx = zmq.Context()
            try:
                sock = ctx.socket(zmq.DEALER)
                sock.setsockopt(zmq.LINGER, 0)
                sock.connect(victim.worker_address)
                replies = [r[0] for r in _pipelined(sock, batches)]
            finally:
                ctx.destroy(linger=0)
        else:
            replies = _over_unix(victim, batches)
        names = set()
        for batch, raw in zip(batches, replies):
            reply = codec.unpackb(raw, any_keys=True)
            if reply.get("e"):
                name = reply["e"][1]
                assert name in ERROR_CLASSES and name != "MemoryError", reply["e"]
                names.add(name)
        assert "ProtocolError" in names and "NotAllowedError" in names
        # the fuzzed session goes on (the fuzz held its key: what it freed was its own)
        assert float(module_for(victim).ones(5).sum()) == 5.0
        assert float(module_for(bystander).arange(4.0).sum()) == 6.0
    finally:
        victim.close()


def _over_unix(victim: kernelproxy.Session, batches: list[list[bytes]]) -> list[bytes]:
    link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    link.settimeout(30)
    try:
        link.connect(victim.worker_address.removeprefix("unix://"))
        framing.send_all(link, [codec.packb({"t": "auth", "k": victim.key})])
        replies = []
        reader = framing.MessageReader(link)
        for start in range(0, len(batches), IN_FLIGHT):
            chunk = batches[start:start + IN_FLIGHT]
            for frames in chunk:
                framing.send_all(link, frames)
            for _ in chunk:
                replies.append(reader.read_message()[0].bytes)
        return replies
    finally:
        link.close()


def test_a_value_keyed_by_numbers_comes_back(fuzz_pool):
    """Fuzzing found a reply the client could not read: ``value_indices`` returns a dict
    keyed by NumPy scalars, which the client's decoder refused (string keys only), leaving
    its replies out of step. A reply's map may have any hashable keys."""
    _pool, bystander, _kept = fuzz_pool
    cp = module_for(bystander)
    found = build_modules()["cupyx.scipy.ndimage"].value_indices(cp.asarray(np.array([0, 1, 1, 0])))
    assert sorted(int(k) for k in found) == [0, 1]
    assert float(module_for(bystander).ones(2).sum()) == 2.0
