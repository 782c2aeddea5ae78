"""Debug probe: the deferred-reads memory test's loop, swapped out, with DEFER 0 and always."""
import os, sys, time, pathlib, tempfile
sys.path.insert(0, os.getcwd())
from gpu_backend.pool import LocalPool  # noqa
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

def row(s):
    return next(r for r in s.status()["sessions"] if r["session"] == s.id)

for defer in sys.argv[1:]:
    os.environ.update(GPUWB_DEFER_READS=defer, GPUWB_RUN_AHEAD_US="1e9", GPUWB_READ_AHEAD_US="1e9",
                      GPUWB_DEBUG_HELD=f"/tmp/o211/held-{defer}.txt")
    tmp = pathlib.Path(tempfile.mkdtemp())
    with LocalPool(devices=os.environ.get("DEV", "0"), swap_idle=0.3, swap_dir=tmp / "swap", lease_timeout=30,
                   memory_limit=256 << 20, swap_host_memory=0) as pool:
        with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False, early_replay=False)) as s:
            cp = module_for(s)
            n = 1 << 20
            x = cp.arange(n, dtype=cp.float32) / n
            for _ in range(70):
                x = x * 0.5 + 1.0
                float(x.sum())
                time.sleep(0.002)
            float(x.max())
            f = s.memory_info()["stretches"]
            t = time.monotonic()
            while not row(s)["swapped"] and time.monotonic() - t < 20:
                time.sleep(0.05)
            r = row(s)
            print(defer, "memory_used", r["memory_used"], "swapped", r["swapped"],
                  {k: f.get(k) for k in ("push_confirmed", "push_rolled", "reads_deferred", "lane")}, flush=True)

# part 2: the lane's power-iteration memory test, graph bytes beside memory
import numpy as np
os.environ.pop("GPUWB_DEBUG_HELD", None)
os.environ.pop("GPUWB_DEFER_READS", None)
for name, extra in (("lane", {"GPUWB_PUSH_AHEAD": "0"}), ("nolane", {"GPUWB_STEADY_LANE": "0"})):
    env = dict(os.environ)
    os.environ.update(GPUWB_RUN_AHEAD_US="1e9", GPUWB_READ_AHEAD_US="1e9", **extra)
    with LocalPool(devices=os.environ.get("DEV", "0"), lease_timeout=20.0, memory_limit=1 << 28, policy="share") as pool:
        os.environ.clear(); os.environ.update(env)
        for rep in range(2):
            with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
                cp = module_for(s)
                a = cp.asarray(np.random.default_rng(52).random((48, 48), dtype=np.float32))
                v = cp.ones(48, dtype=cp.float32)
                out, kept = [], []
                for i in range(70):
                    w = a @ v
                    v = w / cp.sqrt((w * w).sum())
                    e = v[0]
                    out.append(float(e))
                    if i % 17 == 3:
                        kept.append((w, v, e))
                    time.sleep(0.002)
                float(cp.arange(5, dtype=cp.float32).sum())
                info = s.memory_info()
                st = info["stretches"]
                print(name, rep, "arrays", info["arrays"], "memory_used", info["memory_used"],
                      {k: st.get(k) for k in ("graph_bytes", "lane", "held", "graphed", "ahead")}, flush=True)
