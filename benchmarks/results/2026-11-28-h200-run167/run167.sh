#!/bin/bash
# thirty-second session, run 167 (issue 50): a Generator's state copied before a run ahead by
# one memcpyAsync instead of CuPy's copy() (run 166: 76 µs a replay). The GPU tests of draws
# ahead and replay against local CuPy; replay_profile.py of boot_step (the worker's calls);
# programs.py with the draws graphed and eager, side by side, twice.
#   run(command="bash .gpu/run167.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o167; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 150 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_stretch_replay.py tests/gpu_backend/test_pushed_replies.py \
  tests/gpu_backend/test_steady_lane.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
timeout 60 python3 benchmarks/replay_profile.py --devices 0 --loop boot_step --reps 2000 --top 30 > $O/prof-boot_step.txt 2>&1
echo "boot_step rc $? $(date +%T)"; grep -E "an iteration|calls a message" $O/prof-boot_step.txt | cut -c1-200
grep -E "copy|memcpyAsync|before_stateful|generator_state|empty_like" $O/prof-boot_step.txt | head -8 | cut -c1-150
for i in 1 2; do
  timeout 60 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nographdraws --devices 0 \
    --programs bootstrap_rng,monte_carlo_pi_rng --json $O/p-$i.json > $O/p-$i.txt 2>&1
  echo "programs $i rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i.txt | cut -c1-120
  timeout 40 python3 benchmarks/replay_sync.py --devices 0 --reps 1000 --own-pools --transports ipc,ipc-nographdraws \
    --loops boot_step,hot_sync --json $O/r-$i.json > $O/r-$i.txt 2>&1
  echo "replay_sync $i rc $? $(date +%T)"; grep -E "^(boot|hot|raw)" $O/r-$i.txt | cut -c1-140
done
cd ../..
tar czf $OUT/o167.tgz -C /tmp o167
echo "end $(date +%T)"
