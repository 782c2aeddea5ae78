"""benchmarks/request_path.py: an interactive user's requests split into the client's way to
its worker, the worker, and the reply's way back, from the requests fairness.py keeps and the
message spans the workers write (``GPUWB_WORKER_PHASES``). Handed files shaped as those two
write them, with times chosen so that each part is known; and the user's worker told apart
from another user's, busy all along."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.paths import PROJECT_ROOT
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
from request_path import split_requests, the_users_worker  # noqa: E402

#: three requests: issued at 10 s, 10.01 s, 10.02 s; 2, 3 and 4 ms long
ISSUED = [10.0, 10.01, 10.02]
LATENCIES = [0.002, 0.003, 0.004]
#: the user's worker: each request's message starts 0.3 ms after its issue and ends 0.1 ms
#: before the reply is read (the second request is two messages)
OWN = [[10.0003, 10.0019], [10.0103, 10.0110], [10.0112, 10.0129], [10.0203, 10.0239]]
#: another user's worker, one long message after another
OTHER = [[9.999 + 0.005 * n, 10.003 + 0.005 * n] for n in range(8)]


def test_each_request_is_split_into_its_three_parts():
    parts = split_requests(ISSUED, LATENCIES, OWN)
    assert parts["latency"] == LATENCIES
    assert parts["client to worker"] == pytest.approx([0.0003] * 3)
    assert parts["worker"] == pytest.approx([0.0016, 0.0026, 0.0036])
    assert parts["reply to client"] == pytest.approx([0.0001] * 3)


def test_the_users_worker_is_the_one_whose_messages_fit_inside_its_requests():
    phases = {"phases-1.json": {"spans": OTHER}, "phases-2.json": {"spans": OWN}}
    assert the_users_worker(phases, ISSUED, LATENCIES) == "phases-2.json"


def test_the_script_prints_the_parts_and_writes_json(tmp_path):
    folder = tmp_path / "tr" / "share-interactive+2048"
    folder.mkdir(parents=True)
    (folder / "i-requests.json").write_text(json.dumps({"issued": ISSUED, "latencies": LATENCIES}))
    phases = tmp_path / "ph"
    phases.mkdir()
    for pid, spans in ((1, OTHER), (2, OWN)):
        (phases / f"phases-{pid}.json").write_text(json.dumps(
            {"messages": len(spans), "woke": 0, "spun": len(spans), "median_us": {}, "spans": spans}))
    out = tmp_path / "out.json"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "request_path.py"),
                           str(folder), str(phases), "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "client to worker" in done.stdout and "phases-2.json" in done.stdout
    result = json.loads(out.read_text())
    assert result["joined"] == 3 and result["worker"] == "phases-2.json"
    assert result["ms"]["client to worker"]["p50"] == pytest.approx(0.3)
