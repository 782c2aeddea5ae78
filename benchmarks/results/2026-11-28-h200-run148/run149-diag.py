"""Diagnostic (not kept): power iteration's memory with the lane alone and without the lane."""
import sys, numpy as np
sys.path.insert(0, ".")
from tests.run_ahead_sessions import pool_running_ahead
from tests.gpu_backend.test_steady_lane import _power_iteration, _carried
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings
for name, env in (("lane_alone", {"GPUWB_PUSH_AHEAD": "0"}), ("no_lane", {"GPUWB_STEADY_LANE": "0"}), ("default", {})):
    with pool_running_ahead("share", read_now=True, **env) as p:
        for loop in (_power_iteration, _power_iteration, _carried):
            with Session(p.address, p.token, settings=SessionSettings(replay_measured=False)) as s:
                cp = module_for(s)
                loop(cp)
                info = s.memory_info()
                st = info["stretches"]
                print(name, loop.__name__, info["arrays"], info["memory_used"], {k: st.get(k) for k in ("held", "replays", "graphed", "lane", "ahead", "graph_bytes")}, flush=True)
