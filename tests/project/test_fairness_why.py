"""benchmarks/fairness_why.py on a real pool's decision log: each timed request of a session is
matched with the arbiter's answer to it (two sessions taking turns on the NumPy device)."""

from __future__ import annotations

import json
import sys
import time

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.accounting.users import User, hash_token, new_token, save_users
from kernelproxy.modules import module_for

from tests.paths import PROJECT_ROOT  # noqa: E402
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
import fairness_why  # noqa: E402


def test_requests_are_joined_with_the_arbiters_answers(tmp_path, monkeypatch, capsys):
    kept = tmp_path / "fair-interactive+1"
    kept.mkdir()
    monkeypatch.setenv("GPUWB_ARBITER_TRACE", str(tmp_path / "fair-arbiter.jsonl"))
    monkeypatch.setenv("GPUWB_PACING_TRACE", str(kept))   # the workers' own traces
    tokens = {name: new_token(name) for name in ("a", "i")}
    save_users(tmp_path / "users.toml", {name: User(name=name, token_hash=hash_token(token))
                                         for name, token in tokens.items()})
    issued, latencies = [], []
    with LocalPool(devices="cpu", policy="fair", spare_workers=2,
                   users_file=tmp_path / "users.toml") as pool:
        busy = kernelproxy.connect(pool.address, tokens["a"])
        mine = kernelproxy.connect(pool.address, tokens["i"])
        try:
            a, x = module_for(busy).ones((64, 64)), module_for(mine).arange(8.0)
            for _ in range(6):
                float((a @ a).sum())         # the other session holds the device...
                t0 = time.monotonic()        # ...and this one asks for it
                assert float((x + 1).sum()) == 36.0
                issued.append(t0)
                latencies.append(time.monotonic() - t0)
        finally:
            busy.close()
            mine.close()
        # each worker writes its trace as its session ends; the pool's shutdown kills workers
        # (under load, one was killed before it had written: wait for both, up to 30 s; a
        # trace appears whole, renamed once written: Pacer.write_trace)
        deadline = time.monotonic() + 30
        while len(list(kept.glob("*.jsonl"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    (kept / "i-requests.json").write_text(json.dumps({"issued": issued, "latencies": latencies}))
    out = tmp_path / "why.json"
    fairness_why.main([str(kept), "--slower-than", "0", "--json", str(out)])
    summary = json.loads(out.read_text())["summary"]
    assert sum(v["n"] for k, v in summary.items() if "→" not in k) == 6
    # each request either asked for the device (and its answer is classified) or found its
    # session still holding it ("no request": a holder keeps the lease while nobody waits)
    answers = {k: v for k, v in summary.items() if "→" not in k}
    assert set(answers) <= {"free", "preempted", "waited", "no request"}
    assert sum(v["n"] for k, v in answers.items() if k != "no request") >= 1
    printed = capsys.readouterr().out
    assert "vt ms:" in printed and "min_vt=" in printed   # the policy's view, per request
    # the workers' own events: both sessions' traces were written, and each took the device
    assert {p.name.rsplit("-", 1)[0] for p in kept.glob("*.jsonl")} == {"a", "i"}
    events = fairness_why.load_workers(kept)
    assert {user for _, user, kind, _ in events if kind == "grant"} == {"a", "i"}
    assert "issue→want" in summary and summary["issue→want"]["n"] >= 1   # where the time went
    assert "[  i holds the device" in printed or "[  a holds the device" in printed
