# thirtieth session, run 149 (diagnostic + the rest of run 148's campaigns)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
O=/tmp/o149; mkdir -p $O
cd .gpu/clean && export PYTHONPATH=/tmp/site:$PWD GPUWB_TEST_DEVICES=0
gcc -O2 -shared -fPIC $(python3-config --includes) kernelproxy/_held_ops.c -o kernelproxy/_held_ops$(python3-config --extension-suffix) 2>/dev/null
timeout 100 python3 ../diag148.py 2>&1 | grep -v Warn | tail -12
for part in unseen_loop_bodies unseen_loop_bodies_more; do
  timeout 130 python3 benchmarks/unseen_loops.py --devices 0 --local cupy --programs "$(cat ../rest-$part.txt)" --json $O/$part.json > $O/$part.txt 2>&1
  echo "$part rc $? $(date +%T)"; grep -E "programs, " $O/$part.txt | cut -c1-250; grep -c Traceback $O/$part.txt
done
tar czf $OUT/o149.tgz -C /tmp o149
