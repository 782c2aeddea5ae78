#!/bin/bash
# thirty-second session, run 164 (issue 50): a Generator's draws made inside the graphs
# against the same tree with them eager between the graphs (GPUWB_GRAPHED_DRAWS=0, the side
# ipc-nographdraws), side by side in each call: programs.py and replay_sync.py, three calls
# each; the GPU tests of draws and replay against local CuPy; the Generator campaign.
#   run(command="bash .gpu/run164.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o164; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
echo "rev $(cat REV) $(date +%T)"
GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 120 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/gpu_backend/test_draws_ahead.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12
for i in 1 2 3; do
  timeout 60 python3 benchmarks/programs.py --rounds 5 --own-pools --transports ipc,ipc-nographdraws --devices 0 \
    --programs bootstrap_rng,monte_carlo_pi_rng,monte_carlo_pi --json $O/p-$i.json > $O/p-$i.txt 2>&1
  echo "programs $i rc $? $(date +%T)"; grep -E "^[a-z_0-9]+ +([0-9]+|-) +[0-9.]+x" $O/p-$i.txt | cut -c1-120
  timeout 40 python3 benchmarks/replay_sync.py --devices 0 --reps 1000 --own-pools --transports ipc,ipc-nographdraws \
    --loops boot_step,hot_sync --json $O/r-$i.json > $O/r-$i.txt 2>&1
  echo "replay_sync $i rc $? $(date +%T)"; grep -E "^(boot|hot|raw)" $O/r-$i.txt | cut -c1-140
done
NAMES=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from unseen_loop_bodies_graphed_draws import PROGRAMS; print(','.join(PROGRAMS))")
timeout 90 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$NAMES" --json $O/graphed.json > $O/graphed.txt 2>&1
echo "graphed campaign rc $? $(date +%T)"; grep -E "programs, " $O/graphed.txt | cut -c1-250; grep -c Traceback $O/graphed.txt
grep -E "^[a-z_0-9]+ +n= " $O/graphed.txt | cut -c1-120
cd ../..
tar czf $OUT/o164.tgz -C /tmp o164
echo "end $(date +%T)"
