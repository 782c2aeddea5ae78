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
