"""Where a held stretch's replay spends the worker's time, phase by phase, side by side.

    python benchmarks/worker_phases.py [--devices auto] [--reps 1000] [--loops hot_sync,chain20]
        [--sides fast,noahead,...] [--json out.json]

Runs the hot sync ``float((x + 1).sum())`` and the 20-op chain of ``held_loops.py`` on
sessions with the fast path on, the worker's run ahead off (``GPUWB_RUN_AHEAD_US=0``,
worker/run_ahead.py: a replay answered from the one run ahead skips the replay's own
phases, so the sides' walls are the comparison), graph replay's copy tables off
(``GPUWB_COPY_TABLES=0``: a copy call per input and kept result), early replay off (``GPUWB_EARLY_REPLAY=0``), the fast path
off (``GPUWB_FAST_PATH=0``) and stretch replay off
(``GPUWB_GRAPHS=0``), each session's worker timing its phases (``GPUWB_WORKER_PHASES``,
worker/phases.py: received, opened, begun; a replay's entry read, its guards passed
(``r_fits``), its inputs copied in, its parameters written (``r_in``), its graphs launched
(``r_ran``), its kept results made (``r_made``) and handed out, the reads after its graphs
(``r_read``: the wait for the device is here); ops, run, encoded, sent, the pacer's
end of batch, after_reply; with replies pushed ahead, worker/pushed_replies.py: a message
committed ahead confirmed, the next reply pushed, its message committed ahead, the replay
after it run ahead; the sides ``nopush`` and ``nocommit`` turn those off), and prints the median microseconds of each phase of each
worker beside the client's wall time per iteration. A diagnostic for issue 50's "a
replayed stretch costs its graph launch plus <= 20 us of the worker's own time".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernelproxy  # noqa: E402
from json_out import emit  # noqa: E402  (beside this file)
from kernelproxy.modules import module_for  # noqa: E402
from program_bodies import chain20_body, chain20_inputs  # noqa: E402
from served_pool import open_pool  # noqa: E402

from gpu_backend.worker.phases import read_summaries  # noqa: E402

SIDES = {"fast": {}, "noahead": {"GPUWB_RUN_AHEAD_US": "0"}, "notables": {"GPUWB_COPY_TABLES": "0"},
         "noearly": {"GPUWB_EARLY_REPLAY": "0"},
         "nofast": {"GPUWB_FAST_PATH": "0"}, "nographs": {"GPUWB_GRAPHS": "0"},
         "nopush": {"GPUWB_PUSH": "0"}, "nocommit": {"GPUWB_PUSH_AHEAD": "0"}}


def loops(cp):
    x = cp.arange(1000, dtype=cp.float32)
    a, b = chain20_inputs(cp, 1024)
    state = {"a": a}

    def hot():
        return float((x + 1).sum())

    def chain():
        state["a"] = chain20_body(state["a"], b)
        return float(state["a"].sum())
    return {"hot_sync": hot, "chain20": chain}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", default="auto")
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--policy", default="fair", help="the pool's policy (none: no pacing)")
    parser.add_argument("--loops", default="hot_sync,chain20", help="which of hot_sync, chain20")
    parser.add_argument("--sides", default=",".join(SIDES), help="which of " + ", ".join(SIDES))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    sides = {name: SIDES[name] for name in args.sides.split(",")}
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "policy": args.policy,
              "command": " ".join(["python", "benchmarks/worker_phases.py", *(argv or sys.argv[1:])]),
              "runs": {}}
    for loop_name in args.loops.split(","):
        for side, env in sides.items():
            where = tempfile.mkdtemp(prefix="phases-")
            saved = {k: os.environ.get(k) for k in (*env, "GPUWB_WORKER_PHASES", "GPUWB_REPLAY_MEASURED")}
            os.environ.update(env, GPUWB_WORKER_PHASES=where, GPUWB_REPLAY_MEASURED="0")
            try:
                with open_pool(args.policy, args.devices, True) as pool:
                    session = kernelproxy.connect(pool.local_address or pool.address, pool.token)
                    step = loops(module_for(session))[loop_name]
                    for _ in range(50):
                        step()
                    walls = []
                    for _ in range(args.reps):
                        t0 = time.perf_counter()
                        step()
                        walls.append((time.perf_counter() - t0) * 1e6)
                    session.close()
            finally:
                for k, v in saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            phases = {}
            for summary in read_summaries(where, 1, patience=20.0):   # (a file still being written is read again)
                if summary.get("messages", 0) >= args.reps // 2:
                    phases = summary.get("median_us", {})
            result["runs"][f"{loop_name}/{side}"] = {
                "wall_us": round(statistics.median(walls), 1),
                "phases_us": {k: round(v, 1) for k, v in phases.items()}}
    names = ["received", "opened", "begun", "replay_entry", "replay_fits", "replay_copied",
             "replay_in", "replay_ran", "replay_made", "replay_out", "replay_read", "ops", "run",
             "encoded", "sent", "end_batch", "after_reply", "confirmed", "pushed", "committed",
             "ahead"]
    print(f"{'loop/side':18s} {'wall':>6s} " + " ".join(f"{n.replace('replay_', 'r_')[:8]:>8s}" for n in names))
    for key, run in result["runs"].items():
        print(f"{key:18s} {run['wall_us']:6.0f} " + " ".join(
            f"{run['phases_us'].get(n, float('nan')):8.1f}" for n in names))
    emit(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
