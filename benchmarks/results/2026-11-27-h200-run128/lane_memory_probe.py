"""Run 129's probe (twenty-sixth session): the steady lane's session holds 512 bytes more of
device memory after a loop than the generic path's (test_steady_lane.py's
test_a_loop_in_the_lane_holds_no_more_arrays_than_without_it, run 128). Is it for good or
until a later message? The loop of that test on pools with the lane on and off (both
reading at once, as the test's), memory_info read three times after it, a plain op between."""
import os
import sys
import time

sys.path.insert(0, os.getcwd())
os.environ["GPUWB_RUN_AHEAD_US"] = "1e9"
os.environ["GPUWB_READ_AHEAD_US"] = "1e9"
from gpu_backend.pool import LocalPool  # noqa: E402
from kernelproxy.modules import module_for  # noqa: E402
from kernelproxy.session import Session  # noqa: E402
from kernelproxy.settings import SessionSettings  # noqa: E402


def carried(cp, steps=40):
    x = cp.arange(1024, dtype=cp.float32) / 1024
    y = cp.full(1024, 0.25, dtype=cp.float32)
    for _ in range(steps):
        x = (x * 1.01 + y) / (x + 1.5)
        float(x.sum())
        time.sleep(0.002)
    return x.get()


for lane in ("1", "0"):
    os.environ["GPUWB_STEADY_LANE"] = lane
    with LocalPool(devices="0", lease_timeout=20.0, memory_limit=1 << 28, policy="share") as pool:
        with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
            cp = module_for(s)
            carried(cp)
            seen = []
            for k in range(3):
                info = s.memory_info()
                seen.append((info["arrays"], info["memory_used"]))
                float(cp.ones(3).sum())   # (a plain op between)
            st = info["stretches"]
            print(f"lane={lane}: (arrays, memory_used) after the loop {seen}; lane answered "
                  f"{st['lane']}, ahead {st['ahead']}", flush=True)
