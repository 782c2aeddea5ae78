"""The worker's CPU work per replayed held stretch, in instructions (valgrind's callgrind):
``held_instructions.py``'s figure for the other side, which does not swing with the
machine's load as a timing on a 2-core VM does.

    python benchmarks/worker_instructions.py [--loops chain20,hot_sync] [--sides early,noearly]
        [--modes asked,ahead] [--iterations 200] [--warmup 60] [--repeats 1] [--json FILE]
        [--keep DIR] [--policy share]

A pool (``ServedPool(policy, "cpu")``, ``--policy`` none unless told, its own process, no spare workers) per mode starts
each session's worker under ``valgrind --tool=callgrind`` with its instrumentation off
(``GPUWB_WORKER_CALLGRIND``, worker/settings.py: the worker re-runs itself so). Each run is
one plain client process that opens a session on the pool's same-host door
(``GPUWB_REPLAY_MEASURED=0``: the stretch stays held), runs ``--warmup`` iterations (the
stretch offered, held, captured, its early plan learnt), and waits. The driver waits for the
worker to go idle (its CPU time still), switches callgrind's instrumentation on
(``callgrind_control -i on PID``: it returns once the worker has done so), lets the client
run ``--iterations`` more, waits for the worker to go idle again (the run ahead after the
last reply), and switches it off: the worker's instructions (all its threads) over the
iterations are its cost per replayed message (the receive, the replay or the answer run
ahead, the reply and what follows it), ``--repeats`` runs each (sorted).

Modes, the two paths a replay takes in the worker, each counted alone (under valgrind the
worker is tens of times slower than its client, so which one a replay takes would otherwise
depend on the machine's load): ``asked``, run ahead off (``GPUWB_RUN_AHEAD_US=0``): every
replay runs when its message comes; ``ahead``, the client sleeps 100 ms after each iteration,
so the worker is idle when the next replay comes, and every replay is answered from the one
run ahead after the last reply (the path a GPU's worker takes where the client's Python is
the slower side; ``GPUWB_RUN_AHEAD_US`` is raised for it, since the NumPy device's device
time is the host's, tens of times longer under valgrind). The worker's count of replays
answered ahead (``memory_info()``'s stretches, read after the count) is shown beside.
Loops: ``chain20``
(``program_bodies.chain20_body`` and ``float(x.sum())``) and ``hot_sync``
(``float((x + 1).sum())`` on 1000 float32), as in ``held_instructions.py``, and ``hot_step``
(programs.py's hot sync, ``float((x + step * 0.5).sum())``: a float parameter that steps). Sides: ``early``
(the default settings), ``noearly`` (``GPUWB_EARLY_REPLAY=0``, the client's setting). Each
run checks that its timed iterations were answered from the template.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from json_out import emit  # noqa: E402

SIDES = {"early": {}, "noearly": {"GPUWB_EARLY_REPLAY": "0"}}
#: mode: (ms the client sleeps after each iteration, the pool's GPUWB_RUN_AHEAD_US)
MODES = {"asked": (0, "0"), "ahead": (100, str(10 ** 7))}


def client(address: str, token: str, loop: str, warmup: int, n: int, pause: float) -> None:
    """One client run (plain Python): the loop warmed, ``warm`` said, then *n* iterations
    once the driver says ``go``, *pause* s after each; their counts said, and on ``close``
    the worker's replays answered ahead meanwhile, and the session closed."""
    from held_instructions import warmed

    session, x, step = warmed(address, token, loop, warmup)
    stretches = session.stretches
    fast, early = stretches.fast_replays, stretches.early_sent
    ahead = session.memory_info()["stretches"]["ahead"]
    print("warm", flush=True)
    sys.stdin.readline()
    for _ in range(n):
        x = step(x)
        if pause:
            time.sleep(pause)
    print(json.dumps({"fast": stretches.fast_replays - fast, "early": stretches.early_sent - early}),
          flush=True)
    sys.stdin.readline()
    print(json.dumps({"ahead": session.memory_info()["stretches"]["ahead"] - ahead}), flush=True)
    session.close()


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime, stime


def _wait_idle(pid: int, quiet: float = 0.3, limit: float = 30.0) -> None:
    """Until *pid* has used no CPU for *quiet* s (a worker under valgrind finishes its run
    ahead slowly): the count then starts and ends between messages, not inside one."""
    deadline = time.monotonic() + limit
    last = _cpu_ticks(pid)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = _cpu_ticks(pid)
        if now == last:
            return
        last = now


def _instrument(pid: int, on: bool) -> None:
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)], check=True,
                   capture_output=True, timeout=120)


def _instructions(out_file: str) -> int:
    with open(out_file) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError(f"no total in {out_file}")


def _new_worker(workdir: str, before: set[str], limit: float = 120.0) -> int:
    """The pid of the one worker started since *before* (its valgrind log's name)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        logs = set(glob.glob(os.path.join(workdir, "valgrind.*.log"))) - before
        if len(logs) == 1:
            return int(os.path.basename(logs.pop()).split(".")[1])
        if len(logs) > 1:
            raise RuntimeError(f"more than one new worker: {sorted(logs)}")
        time.sleep(0.2)
    raise RuntimeError("no worker under callgrind")


def measure(pool, loop: str, side: str, pause: int, warmup: int, n: int,
            workdir: str) -> tuple[int, dict]:
    before = set(glob.glob(os.path.join(workdir, "valgrind.*.log")))
    env = {**os.environ, "GPUWB_REPLAY_MEASURED": "0", "PYTHONHASHSEED": "0", **SIDES[side],
           "WORKER_INSTRUCTIONS_TOKEN": pool.token}
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--client", pool.local_address,
                             loop, str(warmup), str(n), str(pause)],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if proc.stdout.readline().strip() != "warm":
            raise RuntimeError("the client did not warm up")
        pid = _new_worker(workdir, before)
        _wait_idle(pid)
        _instrument(pid, True)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        counts = json.loads(proc.stdout.readline())
        _wait_idle(pid)
        _instrument(pid, False)
        proc.stdin.write("close\n")
        proc.stdin.flush()
        counts.update(json.loads(proc.stdout.readline()))
        if proc.wait(timeout=300) != 0:
            raise RuntimeError(f"the client failed ({proc.returncode})")
    finally:
        if proc.poll() is None:
            proc.kill()
    out = os.path.join(workdir, f"callgrind.out.{pid}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:   # (written as the worker exits, after the close)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    kept = os.path.join(workdir, f"callgrind.{loop}.{side}.{pause}.{pid}")
    os.rename(out, kept)
    return _instructions(kept), counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--client", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--loops", default="chain20,hot_sync")
    parser.add_argument("--sides", default="early,noearly")
    parser.add_argument("--modes", default="asked,ahead")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", help="also write the result here")
    parser.add_argument("--keep", help="a folder to keep callgrind's files in (callgrind_annotate)")
    parser.add_argument("--policy", default="none",
                        help="the pool's policy (share, the pool's default: a lone session holds a "
                             "lease and its pacer reads it; none: no lease)")
    args = parser.parse_args()
    if args.client:
        address, loop, warmup, n, pause = args.client   # (a token may begin with "-")
        client(address, os.environ["WORKER_INSTRUCTIONS_TOKEN"], loop, int(warmup), int(n),
               int(pause) / 1000)
        return 0
    from gpu_backend.served import ServedPool
    results = {}
    with tempfile.TemporaryDirectory(prefix="worker-instr-") as scratch:
        workdir = os.path.abspath(args.keep or scratch)
        os.makedirs(workdir, exist_ok=True)
        print(f"{'loop':9s} {'side':8s} {'mode':6s} worker instructions per replayed message")
        for mode in args.modes.split(","):
            pause, run_ahead = MODES[mode]
            pool = ServedPool(args.policy, "cpu", env={"GPUWB_WORKER_CALLGRIND": workdir,
                                                  "GPUWB_SPARE_WORKERS": "0",
                                                  "GPUWB_READY_TIMEOUT": "600",
                                                  "GPUWB_RUN_AHEAD_US": run_ahead})
            try:
                for loop in args.loops.split(","):
                    for side in args.sides.split(","):
                        n = args.iterations
                        runs = [measure(pool, loop, side, pause, args.warmup, n, workdir)
                                for _ in range(args.repeats)]
                        pers = sorted(total / n for total, _counts in runs)
                        counts = runs[0][1]
                        results[f"{loop}/{side}/{mode}"] = {"per_message": pers, **counts}
                        print(f"{loop:9s} {side:8s} {mode:6s} "
                              + " ".join(f"{p:10,.0f}" for p in pers)
                              + f"  (fast {counts['fast']}/{n}, early {counts['early']}, "
                              f"ahead {counts['ahead']})", flush=True)
            finally:
                pool.stop()
    emit(results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
