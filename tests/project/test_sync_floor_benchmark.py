"""benchmarks/sync_floor.py: every mode, over the socket and through the shared-memory
mailbox, answers the op's value, and the server's own time comes back for each.

Runs the benchmark itself (few repetitions, the NumPy device): its timings mean nothing
here; that each mode runs, answers right (the script checks every answer against the local
op) and leaves no server behind does.
"""

import json
import subprocess
import sys
from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT
MODES = ["local", "raw", "shm-raw", "ideal", "shm-ideal", "graph", "graph-ahead",
         "shm-graph-ahead", "generic", "shm-generic", "executor", "shm-executor", "generic+meta"]


def test_each_mode_runs_over_the_socket_and_the_mailbox(tmp_path):
    out = tmp_path / "floor.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sync_floor.py"),
                           "--modes", ",".join(MODES), "--reps", "40", "--rounds", "2",
                           "--idle-reps", "2", "--client-spin", "0.0002", "--in-process", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())
    rows = results["modes"]
    assert set(results["in_process_us"]) == {"ideal", "generic", "generic+meta"}
    assert list(rows) == MODES
    for mode in MODES:
        assert rows[mode]["hot_us"] > 0 and rows[mode]["idle_p50_us"] > 0, mode
        if mode != "local":   # the server's time for this mode's requests, apart from its twin's
            assert rows[mode]["server_us"] > 0, mode
    assert "shm-executor" in done.stdout and "in server" in done.stdout
