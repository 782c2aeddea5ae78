#!/bin/bash
# forty-fourth session, run 270 (issue 50): a NumPy number uploaded as its 0-d array (5152742),
# and the uploads campaign (thirteen loops now) against local CuPy; test_held_uploads.py on the GPU.
#   run(command="bash .gpu/run270.sh", carry=[".whl", ".gpu"])
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O=/tmp/o270; mkdir -p $O
(cd .gpu/new && gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null)
(cd .gpu/new && names=$(PYTHONPATH=/tmp/site:$PWD python3 -c "import sys; sys.path.insert(0,'benchmarks'); import unseen_loop_bodies_uploads as u; print(','.join(u.PROGRAMS))") \
 && echo "rev $(cat REV) $(date +%T)" && PYTHONPATH=/tmp/site:$PWD timeout 150 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs $names --json $O/u.json > $O/u.txt 2>&1
 echo "unseen rc $? $(date +%T)"; grep -vE '^ |^\{|^\}|^\]' $O/u.txt | tail -20 | cut -c1-150
 GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy PYTHONPATH=/tmp/site:$PWD timeout 100 python3 -m pytest -q -p no:cacheprovider -n 6 tests/kernelproxy/test_held_uploads.py > $O/t.txt 2>&1
 echo "tests rc $? $(date +%T)"; grep -E "passed|failed|^FAILED|^E  " $O/t.txt | tail -6 | cut -c1-300)
tar czf $OUT/o270.tgz -C /tmp o270
echo "end $(date +%T)"

