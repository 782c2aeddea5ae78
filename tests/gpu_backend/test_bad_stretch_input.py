"""Malformed stretch-replay entries at a worker (docs/stretch-replay.md; the wire keys O, T,
D and G of a batch header): each is answered with a ProtocolError naming no op of the
client's, or (an offer no worker could keep) simply not kept (the keys A and S of early
replay too); the session's arrays stay
as they were, its next batch runs, and everyone else goes on."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_backend.protocol import codec
from gpu_backend.protocol.stretches import MAX_HELD
from kernelproxy.modules import module_for

from .bad_input_rig import worker_reply

MALFORMED = {
    "replay not a list": {"T": "x"},
    "replay too short": {"T": [1, 2]},
    "replay of no held stretch": {"T": [999, 1, [], [], []]},
    "replay's first seq not an int": {"T": [1, "x", [], [], []]},
    "drops not a list": {"D": "x"},
    "drops not ids": {"D": [1.5, "x"]},
    "too many drops": {"D": list(range(MAX_HELD + 1))},
    "frees first not a list": {"T": [999, 1, [], [], []], "F": "x"},
    "frees first not handles": {"T": [999, 1, [], [], []], "F": [1, "x"]},
    "replay's wanted metadata not slots": {"T": [999, 1, [], [], [], [1.5]]},
    "undone early replay not a list": {"A": "x"},
    "undone early replay's batch not an int": {"A": ["x", []]},
    "undone early replay's results not handles": {"A": [1, [1, "x"]]},
    "undone early replay too long": {"A": [1, [], 3]},
    "early replay of no held stretch": {"T": [999, 1, [], [], []], "S": 1},
    "downloads asked for not a list": {"T": [999, 1, [], [], []], "G": "x"},
    "downloads asked for not handles": {"T": [999, 1, [], [], []], "G": [1, "x"]},
    "downloads asked for of handle 0": {"T": [999, 1, [], [], []], "G": [0]},
    "too many downloads asked for": {"T": [999, 1, [], [], []], "G": list(range(1, 18))},
}


def _header(session, **fields) -> bytes:
    return codec.packb({"k": session.key, "b": 10**6, "n": 1, "r": None, **fields})


@pytest.mark.parametrize("fields", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_stretch_entries_are_protocol_errors(bad_pool, bystander, victim, zctx, fields):
    cp = module_for(victim)
    mine = cp.arange(6.0)
    victim.sync()
    reply = worker_reply(zctx, victim.worker_address, [_header(victim, **fields)],
                         key=victim.key)
    assert reply["e"] is not None and reply["e"][1] == "ProtocolError", reply["e"]
    assert reply["e"][0] is None and "h" not in reply
    if "G" in fields:   # (refused for its G, before its replay is looked at)
        assert "G lists" in reply["e"][2], reply["e"]
    np.testing.assert_array_equal((mine * 2).get(), np.arange(6.0) * 2)
    bystander.check()


@pytest.mark.parametrize("offer", ["x", 1.5, [1], None])
def test_an_offer_that_is_no_stretch_id_is_not_kept(bad_pool, bystander, victim, zctx, offer):
    cp = module_for(victim)
    mine = cp.arange(6.0)
    victim.sync()
    record = codec.packb([1, "f", "a", 10**7, "zeros"]) + codec.packb([None, [3], {}])
    reply = worker_reply(zctx, victim.worker_address, [_header(victim, O=offer) + record],
                         key=victim.key)
    assert reply["e"] is None and "h" not in reply
    assert victim.memory_info()["stretches"]["held"] == 0
    np.testing.assert_array_equal((mine * 2).get(), np.arange(6.0) * 2)
    bystander.check()
