#!/bin/bash
# thirty-second session, run 162 (issue 50): can CuPy's Generator (default_rng) draws be captured
# in a CUDA graph and replayed with the next numbers (its states live in device memory)?
#   run(command="bash .gpu/run162.sh", carry=[".whl", ".gpu"])
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o162; mkdir -p $O
cd .gpu/new && export PYTHONPATH=$PWD
echo "rev $(cat REV) $(date +%T)"
timeout 60 python3 benchmarks/curand_capture_probe.py --generator-api --json $O/gen.json > $O/gen.txt 2>&1
echo "generator probe rc $? $(date +%T)"; grep -vE '^ |^\{|^\}' $O/gen.txt | head -20
cd ../..
tar czf $OUT/o162.tgz -C /tmp o162
