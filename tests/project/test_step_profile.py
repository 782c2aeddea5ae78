"""benchmarks/step_profile.py on the NumPy device: its split of a program's time adds up, and
the workers' message spans it lays beside the client's waits come from the live workers
(``GPUWB_WORKER_PHASES``). Its timings mean nothing here; that the parts fit does."""

import json
import subprocess
import sys

from tests.paths import PROJECT_ROOT  # noqa: E402
ROOT = PROJECT_ROOT
sys.path.insert(0, str(ROOT / "benchmarks"))

from step_profile import _intersection  # noqa: E402


def test_the_overlap_of_two_span_lists():
    assert _intersection([(0, 2), (5, 7)], [(1, 6)]) == 2   # 1-2 and 5-6
    assert _intersection([(0, 1)], [(1, 2)]) == 0
    assert _intersection([], [(0, 5)]) == 0
    assert _intersection([(0, 10)], [(2, 3), (4, 6), (9, 12)]) == 4


def test_a_program_split_into_issuing_waits_and_the_workers_spans(tmp_path):
    out = tmp_path / "step.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "step_profile.py"),
                           "--quick", "--devices", "cpu", "--rounds", "1", "--timeline",
                           "--programs", "kmeans", "--transports", "ipc", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    row = json.loads(out.read_text())["programs"]["kmeans"]["proxy_ipc"]
    parts = row["issue_s"] + row["upload_s"] + row["wait_s"] + row["rest_s"]
    assert abs(parts - row["wall_s"]) < 1e-6 and row["rest_s"] > 0
    assert row["ops"] > 100 and 0 < row["batches"] <= row["ops"]
    # the worker ran the batches inside the round, and the client waited for them
    assert row["worker_busy_s"] > 0 and row["wait_s"] > 0
    assert row["worker_busy_while_waited_s"] > 0
    assert row["worker_busy_while_waited_s"] <= row["wait_s"] + 1e-6
    assert row["waited_with_no_batch_running_s"] >= -1e-6
    assert "worker busy while the client issued" in done.stdout
