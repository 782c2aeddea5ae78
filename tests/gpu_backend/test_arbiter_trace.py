"""The arbiter's decision log (``GPUWB_ARBITER_TRACE``), from a real pool whose two sessions
take turns on one NumPy device: every message the arbiter acted on, with its answer."""

from __future__ import annotations

import json

import kernelproxy
from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for


def test_every_decision_is_a_json_line(tmp_path, monkeypatch):
    log = tmp_path / "arbiter.jsonl"
    monkeypatch.setenv("GPUWB_ARBITER_TRACE", str(log))
    with LocalPool(devices="cpu", policy="fair", spare_workers=2) as pool:
        sessions = [kernelproxy.connect(pool.address, pool.token) for _ in range(2)]
        try:
            for _ in range(3):
                for s in sessions:
                    xp = module_for(s)
                    assert float((xp.arange(8.0) + 1).sum()) == 36.0
        finally:
            for s in sessions:
                s.close()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    wants = [entry for entry in lines if entry["msg"].get("t") == "want"]
    assert len({entry["session"] for entry in wants}) == 2
    grants = [a for entry in lines for a in entry["actions"] if a["a"] == "grant"]
    assert grants and all(type(a["grant"]) is int and a["session"] for a in grants)
    assert all(isinstance(entry["t"], float) for entry in lines)
    # a session's request names its user; a deadline's decisions (a tick, when a turn ran
    # out: more often on a loaded machine) belong to no session and no user, nor does a
    # worker's late message after its session ended (arbiter/service.py)
    assert all(entry["user"] for entry in wants)
    assert all(entry["user"] is None for entry in lines if not entry["session"])
    # a request carries the policy's view before it answered: why one waited shows there
    for entry in wants:
        state = entry["state"]
        assert state["policy"] == "fair" and "min_vt" in state and "told" in state
        assert entry["user"] in state["users"]
        assert all(isinstance(u["vt"], float) for u in state["users"].values())
    assert all("state" not in entry for entry in lines if entry["msg"].get("t") != "want")
