#!/bin/bash
# forty-fifth session, run 276 (issue 50): a NaN scalar no parameter (run 275's finding);
# the GPU tests of NaN scalars, downloads through graphs and stretch replay against local
# CuPy; the NaN probe again; the unseen loops timed again (unseen_speed.py).
#   run(command="bash .gpu/run276.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o276; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -p no:cacheprovider -n 6 \
  tests/kernelproxy/test_nan_scalars_not_params.py tests/gpu_backend/test_downloads_replayed.py tests/gpu_backend/test_stretch_replay.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -12 | cut -c1-300)
(cd .gpu/new && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 benchmarks/nan_param_probe.py --devices 0 --json $O/nan.json > $O/nan.txt 2>&1
 echo "probe rc $?"; grep -A8 "cycling" $O/nan.txt | head -8)
(cd .gpu/new && echo "unseen $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 330 python3 benchmarks/unseen_speed.py --devices 0 --rounds 3 --json $O/us.json > $O/us.txt 2>&1
 echo "unseen rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/us.txt | sed -n '/^program /,$p' | head -16 | cut -c1-150; grep -A12 "^campaign" $O/us.txt | cut -c1-100; grep -E "with problems|cannot run|in all" $O/us.txt)
tar czf $OUT/o276.tgz -C /tmp o276
echo "end $(date +%T)"
