#!/bin/bash
# forty-second session, run 248 (issue 50): where the slowest programs' workers spend each
# message on a GPU, at the session's first tree (bc062ed): program_phases.py over the
# programs furthest above local CuPy in run 244's standing, and its paths (pushed, the
# lane's, generic) by message.
#   run(command="bash .gpu/run248.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o248; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
for p in sgd_minibatch random_walk langevin_annealed mc_option bootstrap_rng fused_loop hot_sync heat2d_2048 nbody mlp_training; do
  (cd .gpu/new && echo "phases $p rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 40 python3 benchmarks/program_phases.py --rounds 3 --devices 0 --top 16 \
     --programs $p --json $O/ph-$p.json > $O/ph-$p.txt 2>&1; echo "rc $?"; grep -v '^ ' $O/ph-$p.txt | head -1 | cut -c1-400
   grep -o "paths {[^}]*}" $O/ph-$p.txt | head -1; grep -o "the lane's runs ahead declined.*" $O/ph-$p.txt | cut -c1-420)
done
tar czf $OUT/o248.tgz -C /tmp o248
echo "end $(date +%T)"
