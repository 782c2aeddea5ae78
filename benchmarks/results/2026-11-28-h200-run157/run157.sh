#!/bin/bash
# thirty-first session, run 157 (issue 50): can a stretch's graphs capture its matrix
# products? gemm_capture_probe.py: cuBLAS's GEMM called as CuPy's dot calls it, inside a
# capture, against CuPy's eager product, bit for bit, and the host's cost of each.
#   run(command="bash .gpu/run157.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o157; mkdir -p $O
cd .gpu/new && export PYTHONPATH=/tmp/site:$PWD
echo "rev $(cat REV) $(date +%T)"
timeout 120 python3 benchmarks/gemm_capture_probe.py --reps 1000 --json $O/probe.json > $O/probe.txt 2>&1
echo "probe rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/probe.txt | head -30
tar czf $OUT/o157.tgz -C /tmp o157
echo "end $(date +%T)"
