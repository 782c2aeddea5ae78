"""A heartbeat the front door can answer only "not alive" without a reason (a session it
neither holds nor knows to have ended, or one it holds under another key) is noted in the
pool's log, once a session and for at most UNKNOWN_NOTED sessions: a client that hears "the
pool ended this session" with no reason leaves a trace on the pool's side. Real pool, real
sockets."""

from __future__ import annotations

import logging

import zmq

import kernelproxy
from gpu_backend.door.session_records import UNKNOWN_NOTED
from gpu_backend.pool import LocalPool
from gpu_backend.protocol import codec
from kernelproxy.modules import module_for

from .bad_input_rig import raw_request


def _beat(ctx: zmq.Context, address: str, session, key) -> dict:
    return codec.unpackb(raw_request(ctx, address, [codec.packb(
        {"t": "hb", "session": session, "key": key})])[0])


def test_heartbeats_the_door_cannot_place_are_noted_once_each(caplog):
    ctx = zmq.Context()
    caplog.set_level(logging.WARNING, logger="gpu_backend.door.frontdoor")
    with LocalPool(devices="cpu", spare_workers=0) as pool:
        session = kernelproxy.connect(pool.address, pool.token)
        try:
            assert _beat(ctx, pool.address, session.id, session.key)["alive"] is True
            assert not [r for r in caplog.records if "heartbeat for session" in r.message]
            for _ in range(3):   # noted once
                reply = _beat(ctx, pool.address, "0123456789abcdef", b"\0" * 32)
                assert reply == {"ok": True, "alive": False}
            reply = _beat(ctx, pool.address, session.id, b"\1" * 32)   # held, wrong key
            assert reply["alive"] is False and "reason" not in reply
            for odd in (["a"], 7, None):   # (not a session id: answered, not noted)
                assert _beat(ctx, pool.address, odd, b"")["alive"] is False
            for n in range(UNKNOWN_NOTED + 5):   # a flood of made-up ids: noted up to the cap
                _beat(ctx, pool.address, f"made-up-{n}", b"")
            notes = [r.getMessage() for r in caplog.records if "heartbeat for session" in r.getMessage()]
            assert sum("0123456789abcdef" in n and "neither holds" in n for n in notes) == 1
            assert sum(session.id in n and "holds under another key" in n for n in notes) == 1
            assert len(notes) == UNKNOWN_NOTED
            assert int(module_for(session).arange(4).sum()) == 6   # (the session serves on)
        finally:
            session.close()
    ctx.term()


def test_a_beat_the_door_refuses_is_a_missed_beat_not_a_lost_session():
    """The door's refusal of a beat it could not decode (``ok`` false) says nothing of the
    session: the heartbeat reads it as a missed beat with the refusal's text, where it read
    "not alive" and reported the session lost for no reason (two threads once shared a
    Packer and sent such a beat: test_codec_threads.py); the door's real answers read as
    they say. Real pool, real sockets, the door's own replies."""
    from kernelproxy.connection import Heartbeat

    ctx = zmq.Context()
    with LocalPool(devices="cpu", spare_workers=0) as pool:
        session = kernelproxy.connect(pool.address, pool.token)
        try:
            beat = Heartbeat(pool.address, session.id, session.key, 1.0)
            refused = raw_request(ctx, pool.address, [b"\xc1\x81\xa1t\xa2hb"])[0]
            assert codec.unpackb(refused)["ok"] is False
            lost, refusal = beat.answer(refused)
            assert lost is None and refusal.startswith("ProtocolError: undecodable message"), refusal
            alive = raw_request(ctx, pool.address, [codec.packb(
                {"t": "hb", "session": session.id, "key": session.key})])[0]
            assert beat.answer(alive) == (None, None)
            lost, refusal = beat.answer(b"\xc1")   # (an answer it cannot decode: missed too)
            assert lost is None and "could not be decoded" in refusal, refusal
            gone = raw_request(ctx, pool.address, [codec.packb(
                {"t": "hb", "session": "0123456789abcdef", "key": b"\0" * 32})])[0]
            lost, refusal = beat.answer(gone)
            assert refusal is None and lost.startswith("the pool ended this session"), lost
            assert int(module_for(session).arange(4).sum()) == 6   # (the session serves on)
            assert session.heartbeat.lost is None
        finally:
            session.close()
    ctx.term()


def test_malformed_requests_are_said_in_the_log_one_line_at_most_every_interval():
    """The door's refusals of malformed requests, counted and said in one line at most
    every interval, with the first's text, however many came (the tests' own clock)."""
    from gpu_backend.door.client_requests import MalformedLog
    from gpu_backend.protocol.errors import ProtocolError

    now = [100.0]
    malformed = MalformedLog(clock=lambda: now[0], every=10.0)
    assert malformed.line() is None
    for n in range(100_000):
        malformed.note(ProtocolError(f"undecodable message: {n}" + "x" * 500))
    assert malformed.line() is None   # (not yet an interval since the last)
    now[0] += 10.0
    line = malformed.line()
    assert line.startswith("refused 100000 malformed requests in the last 10 s"), line
    assert "undecodable message: 0" in line and len(line) < 250, line
    now[0] += 30.0
    assert malformed.line() is None   # (none since)
    malformed.note(ProtocolError("front-door messages are maps"))
    assert "refused 1 malformed requests" in malformed.line()


def test_a_session_its_client_did_not_close_is_said_in_the_pools_log(caplog):
    """A session whose worker was killed (say, by the kernel's OOM killer) ends in the pool's
    log, whose and why; sessions their clients close, on either transport, say nothing
    there. Real pool, real worker processes."""
    import os
    import signal

    from ..waiting import until

    caplog.set_level(logging.WARNING, logger="gpu_backend.door.frontdoor")
    with LocalPool(devices="cpu", spare_workers=0) as pool:
        for address in (pool.address, pool.tcp_address):
            closed = kernelproxy.connect(address, pool.token)
            assert int(module_for(closed).arange(4).sum()) == 6
            closed.close()
        assert until(lambda: not pool.door.sessions, 30)
        assert not [r for r in caplog.records if "ended:" in r.getMessage()], [r.getMessage() for r in caplog.records]
        killed = kernelproxy.connect(pool.address, pool.token)
        try:
            worker = next(w for w in list(pool.door.host.workers.values())
                          if w.session is not None and w.session.sid == killed.id)
            os.kill(worker.process.pid, signal.SIGKILL)
            assert until(lambda: killed.id not in pool.door.sessions, 30)
        finally:
            killed.close()
    said = [r.getMessage() for r in caplog.records if "ended:" in r.getMessage()]
    assert len(said) == 1 and killed.id in said[0], said
    assert "worker ended" in said[0] or "worker exited" in said[0], said   # (its channel
    # closed, or its process reaped, first)
