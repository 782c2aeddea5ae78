"""The steady lane's memory test's figures, side by side for one tree (run 200's diagnostic)."""
import sys, time
sys.path.insert(0, sys.argv[1])
from tests.gpu_backend.test_steady_lane import _power_iteration, _carried
from tests.run_ahead_sessions import pool_running_ahead
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
with pool_running_ahead("share", read_now=True, GPUWB_PUSH_AHEAD="0") as a, pool_running_ahead("share", read_now=True, GPUWB_STEADY_LANE="0") as b:
    for rep in range(3):
        for loop in (_power_iteration, _carried):
            counts = []
            for p in (a, b):
                with Session(p.address, p.token, settings=SessionSettings(replay_measured=False)) as s:
                    loop(module_for(s)); info = s.memory_info()
                    time.sleep(0.2); later = s.memory_info()
                    st = info["stretches"]
                    counts.append((info["arrays"], info["memory_used"], later["memory_used"], st.get("graph_bytes"), st.get("copied"), st.get("lane")))
            print(sys.argv[1].split("/")[-1], rep, loop.__name__, "lane:", counts[0], "without:", counts[1], flush=True)
