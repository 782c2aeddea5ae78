#!/bin/bash
# thirty-fifth session, run 192 (issue 50): is a RandomState's normal(loc, scale, n) the standard
# draw scaled by one fma, bit for bit? (benchmarks/normal_affine_probe.py)
#   run(command="bash .gpu/run192.sh", carry=[".whl", ".gpu"])
set -u
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o192; mkdir -p $O
cd .gpu/new
timeout 200 python3 benchmarks/normal_affine_probe.py --json $O/n.json > $O/n.txt 2>&1
echo "probe rc $? $(date +%T)"; head -16 $O/n.txt
cd ../..
tar czf $OUT/o192.tgz -C /tmp o192
