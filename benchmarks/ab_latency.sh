#!/usr/bin/env bash
# A/B of the latency rows on one GPU host: this tree ("new") against .ab/old ("old", another
# commit's packages run with this tree's benchmarks), in alternating order, twice each:
#   rm -rf .ab/old && mkdir -p .ab/old && git archive <commit> gpu_backend kernelproxy catalog workbench | tar -x -C .ab/old
#   cp -r benchmarks .ab/old/      # then on the GPU machine, carrying .whl and .ab:
#   OUT=... [TURNS="1 2"] bash benchmarks/ab_latency.sh      (results in $OUT/d.tgz)
# BENCHES="floor lat prog" (the default: all three) picks which run, to fit a command's 10 minutes.
# AB_PROGRAMS: the programs of "prog" (default: the seven before issue 50, as the A/Bs before it ran).
# OLD_ENV="NAME=VALUE ...": "old" is this tree run with those variables set instead (a setting's
# A/B, e.g. OLD_ENV="GPUWB_SPIN_SLOTS=0" for the pool without long spins); no .ab/old needed.
# Hosts move these figures by +-30 % between runs: only the two sides of one run compare.
# Each side runs from its own tree as the working directory: the pool starts its workers with
# `python -m gpu_backend.worker`, which finds the package in the working directory first
# (from the repository root, "old" pools ran this tree's workers).
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1
D=$OUT/d; mkdir -p $D
nvidia-smi --query-gpu=name,driver_version --format=csv > $D/gpu.txt
for i in ${TURNS:-1 2}; do
 for side in new old; do
  if [ $side = new ] || [ -n "${OLD_ENV:-}" ]; then R=$PWD; else R=$PWD/.ab/old; fi
  ENVS=""; if [ $side = old ]; then ENVS=${OLD_ENV:-}; fi
  if [ -n "$ENVS" ]; then export $ENVS; fi
  cd $R
  B=" ${BENCHES:-floor lat prog} "
  [[ $B == *" floor "* ]] && PYTHONPATH=/tmp/site:$R timeout 120 python3 $R/benchmarks/sync_floor.py --modes local,raw,executor,proxy --reps 2000 --rounds 2 --idle-reps 50 --json $D/floor-$side-$i.json > $D/floor-$side-$i.log 2>&1
  [[ $B == *" lat "* ]] && PYTHONPATH=/tmp/site:$R timeout 150 python3 $R/benchmarks/overhead.py --gemm 0 --transfer-mb 64 --transfer-reps 1 --pipelined-ops 10000 --transports ipc,tcp --latency-reps 2000 --idle-reps 100 --json $D/lat-$side-$i.json > $D/lat-$side-$i.log 2>&1
  [[ $B == *" prog "* ]] && PYTHONPATH=/tmp/site:$R timeout 150 python3 $R/benchmarks/programs.py --rounds 3 --transports ipc --programs ${AB_PROGRAMS:-black_scholes,kmeans,conjugate_gradient,mlp_training,stencil,random_walk,hot_sync} --json $D/prog-$side-$i.json > $D/prog-$side-$i.log 2>&1
  echo "== $side $i"; grep -sv '^ *"\|^{\|^}\|^ *}\|^ *\]' $D/floor-$side-$i.log | head -8; grep -si "hot sync\|idle\|pipelined" $D/lat-$side-$i.log | head -6; grep -sv '^ \|^{\|^}' $D/prog-$side-$i.log | head -7
  for e in $ENVS; do unset "${e%%=*}"; done
  cd - > /dev/null
 done
done
cd $OUT && tar czf d.tgz d && rm -rf d
