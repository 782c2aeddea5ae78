#!/bin/bash
# forty-fifth session, run 275 (issue 50): run 274 found special_scalars and
# nan_inf_zero_scalars with other NaN signs than local CuPy once their stretches (closing
# with downloads) were replayed through graphs: nan_param_probe.py (new) says whether an
# op given a NaN scalar gives other NaN bits as a Python float and as a 0-d array, and what
# the pool gives, the scalar constant and cycling nan, -nan.
#   run(command="bash .gpu/run275.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o275; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && echo "rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 200 python3 benchmarks/nan_param_probe.py --devices 0 --json $O/nan.json > $O/nan.txt 2>&1
 echo "probe rc $? $(date +%T)"; grep -vE "^ |^\{|^\}" $O/nan.txt | head -30 | cut -c1-200)
tar czf $OUT/o275.tgz -C /tmp o275
echo "end $(date +%T)"
