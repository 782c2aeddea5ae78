"""A batch that is its header alone (a replayed held stretch, a cancel) is decoded without a
streaming unpacker (worker/executor.py, ``Executor.open_batch``); every other batch, and a
malformed one, as before: the same errors, the same frees and results."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.protocol import codec
from kernelproxy.modules import module_for

from .bad_input_rig import worker_reply


def _header(session, **fields) -> bytes:
    return codec.packb({"k": session.key, "b": 10**6, "n": 1, "r": None, **fields})


def _malformed(session) -> dict:
    whole = _header(session)
    return {
        "empty": (b"", "empty or truncated batch"),
        "truncated header": (whole[:-3], "empty or truncated batch"),
        "undecodable header": (b"\xc1", "undecodable batch header"),
        "header not a map": (codec.packb([1, 2]), "the batch header is not a map"),
        "header then a truncated record": (whole + b"\x95\x01", "truncated op record"),
        "header then no record": (whole + b"\xc1", "undecodable op record"),
    }


@pytest.mark.parametrize("case", ["empty", "truncated header", "undecodable header",
                                  "header not a map", "header then a truncated record",
                                  "header then no record"])
def test_a_malformed_batch_says_what_it_said_before(bad_pool, bystander, victim, zctx, case):
    cp = module_for(victim)
    mine = cp.arange(6.0)
    victim.sync()
    body, said = _malformed(victim)[case]
    reply = worker_reply(zctx, victim.worker_address, [body], key=victim.key)
    assert reply["e"] is not None and reply["e"][1] == "ProtocolError", reply["e"]
    assert said in reply["e"][2], reply["e"]
    np.testing.assert_array_equal((mine * 2).get(), np.arange(6.0) * 2)
    bystander.check()


def test_a_held_loop_with_frees_after_its_replays_frees_them(bad_pool, victim):
    """Each replay of the loop's stretch carries a free after it (an array of the caller's
    dropped inside the loop): those batches take the unpacker, the others not; both free
    what the client dropped and give the same values."""
    cp = module_for(victim)
    x = cp.arange(1000, dtype=cp.float32)
    spares = [cp.full(4, float(i)) for i in range(12)]
    victim.sync()
    before = victim.memory_info()["arrays"]
    got = []
    for i in range(12):
        got.append(float((x + 1).sum()))
        spares[i] = None   # (freed in the next batch, after the replay or in its header)
    got.append(float((x + 1).sum()))
    after = victim.memory_info()["arrays"]
    assert got == [float((np.arange(1000, dtype=np.float32) + 1).sum())] * 13
    assert after == before - 12
    assert victim.memory_info()["stretches"]["replays"] > 0
