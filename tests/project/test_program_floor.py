"""benchmarks/program_floor.py: the device's busy time is the union of its work's intervals
(overlaps counted once), taken from a Chrome trace's kernels, copies and fills only; with no
GPU the script says what it needs and stops."""

import subprocess
import sys

from tests.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))

from program_floor import busy_us, device_intervals  # noqa: E402


def test_overlapping_and_touching_intervals_are_counted_once():
    assert busy_us([]) == 0.0
    assert busy_us([(0, 10), (20, 25)]) == 15
    assert busy_us([(5, 15), (0, 10), (12, 14)]) == 15   # out of order, nested, overlapping
    assert busy_us([(0, 10), (10, 20)]) == 20            # touching


def test_only_the_devices_work_is_taken_from_a_trace():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "ts": 100.0, "dur": 5.0},
        {"ph": "X", "cat": "gpu_memcpy", "ts": 103.0, "dur": 4.0},
        {"ph": "X", "cat": "gpu_memset", "ts": 200.0, "dur": 1.0},
        {"ph": "X", "cat": "cuda_runtime", "ts": 90.0, "dur": 50.0},   # the host's launch call
        {"ph": "i", "cat": "kernel", "ts": 300.0},                       # not a complete event
    ]}
    intervals = device_intervals(trace)
    assert intervals == [(100.0, 105.0), (103.0, 107.0), (200.0, 201.0)]
    assert busy_us(intervals) == 8.0


def test_without_a_gpu_it_says_what_it_needs():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        import torch  # noqa: F401
        import pytest
        pytest.skip("a GPU is here: the script runs for real on it")
    except Exception:
        pass
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "benchmarks" / "program_floor.py"),
                           "--programs", "chain20"], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "needs CuPy, PyTorch and a GPU" in done.stderr


def test_each_looping_program_names_its_loop_count():
    """Every curated program with a loop runs its set-up alone with that count at 0 or 1
    (here on NumPy: the same code the GPU run times)."""
    import numpy as np

    from program_floor import curated, setup_call
    from programs import ITERATIONS, PROGRAMS, target_of
    for name, (fn, _full, _quick, _tol) in PROGRAMS.items():
        assert (setup_call(fn) is None) == (ITERATIONS[name] is None), name
        loop = curated(np, name)
        assert loop.target == target_of(name) and len(loop.setups) == (0 if ITERATIONS[name] is None else 2)
    for name in ("chain20", "kmeans", "logistic_regression"):   # (0 iterations, 1, 0)
        loop = curated(np, name)
        assert any(_runs(call) for call in loop.setups), name


def test_unseen_loops_are_judged_by_their_iterations_as_programs_are():
    """``--unseen``: each campaign's first loop, its run and a set-up on NumPy; the target
    0.5 from 20 iterations, else 1.0."""
    import numpy as np

    from program_floor import unseen
    from unseen_programs import CAMPAIGN_OF, PROGRAMS as UNSEEN
    firsts = {}
    for name, campaign in CAMPAIGN_OF.items():
        firsts.setdefault(campaign, name)
    for name in firsts.values():
        loop = unseen(np, name)
        n = UNSEEN[name][1]
        assert loop.target == (0.5 if n >= 20 else 1.0), name
        if UNSEEN[name][2]:   # (a loop NumPy runs too)
            loop.run()
            assert any(_runs(call) for call in loop.setups), name


def _runs(call) -> bool:
    try:
        call()
        return True
    except Exception:
        return False
