"""Run 233's probe: a stepping float's guess and history as the lane makes them each
message (lane_plans.stepped), timed on this host for the tree before the long run (mid:
histories of 8) and after it (new: 14), alternating, the median of nine rounds."""
import importlib.util
import statistics
import sys
import timeit


def load(tree):
    spec = importlib.util.spec_from_file_location(f"fs_{tree}", f".gpu/{tree}/gpu_backend/worker/float_steps.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


for name, make in (("step * 0.5", lambda i: i * 0.5), ("i * 0.01", lambda i: i * 0.01),
                   ("0.1 + 1e-4 * i", lambda i: 0.1 + 1e-4 * i)):
    values = [make(i) for i in range(3000)]
    times = {"mid": [], "new": []}
    for _ in range(9):
        for tree in ("mid", "new"):
            fs = load(tree)
            kept = fs.KEPT

            def run():
                for i in range(kept, 3000):
                    history = tuple(values[i - kept:i])
                    nxt = fs.next_float(history)
                    history = (*history, nxt)[-kept:]
            times[tree].append(timeit.timeit(run, number=1) / (3000 - kept) * 1e6)
    print(f"{name:16} mid {statistics.median(times['mid']):.2f} us   new {statistics.median(times['new']):.2f} us")
