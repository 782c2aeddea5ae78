#!/usr/bin/env bash
# Everything this project checks on a GPU machine, in one command:
#   1. the differential tests with the pool on the CuPy device, compared with local CuPy
#   2. benchmarks/overhead.py (proxy vs local CuPy on the same GPU)
#   3. fair: the users/arbiter tests on the GPU and benchmarks/fairness.py (FAIR_ARGS)
#   4. policies: overhead.py --compare-policies (OVERHEAD_ARGS)
#   5. probe: wakeup_probe.py (the host's wake-ups and timers, the GPU's clocks after idle)
#   6. latency: overhead.py over ipc:// and tcp:// with the idle case (LATENCY_ARGS), then
#      programs.py, whole programs proxy vs local (PROGRAMS_ARGS)
#   7. suite: CuPy's own test suite, local CuPy vs the proxy (SUITE_ARGS, SUITE_TIMEOUT)
#   8. handover: handover.py, what handing the GPU between two processes costs without the
#      pool (HANDOVER_ARGS)
#   9. floor: sync_floor.py, the hot sync taken apart down to its floors (FLOOR_ARGS)
#  10. mix: gemm_mix.py, a small GEMM's device time when it takes turns with a big one,
#      plain CuPy (MIX_ARGS)
#  11. hardening: issue 35's checks on a GPU (the quota's allocation paths, the attack and
#      fault tests, the attack benchmark's GPU parts, the hot sync beside local CuPy)
#  12. graphs: CuPy's graph API through the pool (issue 50), tests and benchmark
#  13. fastpath: issue 50's figures (the client's fast path for held stretches): held_loops.py
#      (HELD_ARGS), replay_sync.py (REPLAY_ARGS), programs.py with issue 50's programs
#      (FAST_PROGRAMS_ARGS), each with local CuPy, replay on, the fast path off and replay off
#  14. swap, swap-leak: issue 52 (an idle session's arrays swapped to host memory or disk and
#      back): the swap tests on the GPU and benchmarks/swap.py (SWAP_ARGS); 1 000 swap cycles
#      leaking nothing (SWAP_LEAK_ARGS)
# Targets: all, tests, kernel, fair (tests + fairness), fairness (the benchmark alone),
# policies, probe, bench, latency, suite, handover, floor, mix, hardening, graphs (CuPy's graph
# API: its tests and benchmarks/graph_api.py), fastpath, swap, swap-leak; several may be given: gpu_check.sh probe policies fairness
# Wheels the GPU image lacks are installed from .whl/ (see benchmarks/README.md).
# Outputs land in $OUT (or ./gpu-out) as logs and JSON.
# MPS=1: the targets run under CUDA's Multi-Process Service (a control daemon started here
# with its pipes in /tmp and its log in $OUT/mps-log, stopped at the end; every CUDA process of the run,
# pool workers and plain CuPy alike, becomes its client). The GPU's settings are not touched.
set -u
# the programs the latency target has run since issue 8 (programs.py runs every one by default)
PROGRAMS_BEFORE_50=black_scholes,kmeans,conjugate_gradient,mlp_training,stencil,random_walk,hot_sync
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -c "import cupy, numpy, zmq, msgpack; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'pyzmq', zmq.__version__, 'msgpack', msgpack.version)" | tee -a "$OUT/gpu.txt"
if [ -n "${MPS:-}" ]; then
  # (the pipes' socket paths must stay short; the log lands with the outputs)
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/gpuwb-mps-pipe CUDA_MPS_LOG_DIRECTORY=$(realpath "$OUT")/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "MPS: the control daemon did not start"; exit 1; }
  trap 'echo quit | nvidia-cuda-mps-control; sleep 1' EXIT
  python3 -c "import cupy; cupy.arange(3).sum(); print('MPS: a CUDA client ran')" || exit 1
  echo get_server_list | nvidia-cuda-mps-control | sed 's/^/MPS server: /'
fi
for what in ${@:-all}; do
if [ "$what" = all ] || [ "$what" = probe ]; then
  timeout 200 python3 benchmarks/wakeup_probe.py --json "$OUT/wakeup.json" 2>&1 | tee "$OUT/wakeup.log"
fi
if [ "$what" = all ] || [ "$what" = tests ]; then
  GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 420 python3 -m pytest -q -p no:cacheprovider -n 0 \
    -o addopts="-ra" --timeout 120 ${GPU_TESTS:-tests/project/test_smoke.py tests/kernelproxy/test_diff_*.py tests/kernelproxy/test_transfers.py tests/kernelproxy/test_async.py tests/kernelproxy/test_importhook.py tests/gpu_backend/test_faults.py tests/gpu_backend/test_pool.py} \
    2>&1 | tee "$OUT/gpu-tests.log" | tail -40
fi
if [ "$what" = all ] || [ "$what" = kernel ]; then
  # the Jupyter side on a GPU: the kernelspec into a prefix, the kernel tests, custom
  # kernels, and gpuwb demo (the quickstart notebook through the kernel)
  python3 -c "from workbench.kernelspec import install_kernelspec as i; i(prefix='/tmp/jp')"
  export JUPYTER_PATH=/tmp/jp/share/jupyter
  GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 300 python3 -m pytest -q -p no:cacheprovider -n 0 \
    -o addopts="-ra" --timeout 120 tests/kernelproxy/test_custom_kernels.py tests/workbench/test_kernel.py 2>&1 \
    | tee "$OUT/gpu-kernel-tests.log" | tail -15
  timeout 200 python3 -c "import sys; from workbench.cli import main; sys.exit(main(['demo']))" \
    2>&1 | tee "$OUT/gpu-demo.log" | tail -60
fi
if [ "$what" = all ] || [ "$what" = fair ]; then
  # users and the arbiter on a GPU: the quota and pool tests with the pool on the GPU, then
  # the fairness benchmark (policies none, fair, share side by side) and its plot
  GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 240 python3 -m pytest -q -p no:cacheprovider -n 0 \
    -o addopts="-ra" --timeout 120 tests/gpu_backend/test_users_pool.py tests/gpu_backend/test_pool.py tests/kernelproxy/test_async.py \
    tests/kernelproxy/test_transfers.py tests/gpu_backend/test_faults.py tests/kernelproxy/test_custom_kernels.py 2>&1 \
    | tee "$OUT/gpu-fair-tests.log" | tail -8
fi
if [ "$what" = all ] || [ "$what" = fair ] || [ "$what" = fairness ]; then
  # (every scenario by default, the long-kernel ones among them: 9 scenarios of 15 s under
  # 3 policies, an estimated 10 min on a GPU, not yet timed; FAIR_ARGS=--quick: 4 s each)
  timeout ${FAIR_TIMEOUT:-900} python3 benchmarks/fairness.py ${FAIR_ARGS:-} --json "$OUT/fairness.json" \
    --plot "$OUT/fairness.png" 2>&1 | tee "$OUT/fairness.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = all ] || [ "$what" = handover ]; then
  timeout ${HANDOVER_TIMEOUT:-300} python3 benchmarks/handover.py ${HANDOVER_ARGS:-} --json "$OUT/handover.json" \
    2>&1 | tee "$OUT/handover.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = all ] || [ "$what" = policies ]; then
  # a lone session under policy none vs fair (the arbiter must cost it nothing), same run;
  # POLICY_CORES=2,3,4 pins the client and both pools to those cores: a microVM's vCPUs are
  # not alike, and a worker that lands on a slow one runs ~30 % slower (run 61)
  ${POLICY_CORES:+taskset -c $POLICY_CORES} timeout 300 python3 benchmarks/overhead.py --compare-policies ${OVERHEAD_ARGS:-} \
    --json "$OUT/overhead-policies.json" 2>&1 | tee "$OUT/overhead-policies.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = all ] || [ "$what" = latency ]; then
  timeout ${LATENCY_TIMEOUT:-300} python3 benchmarks/overhead.py ${LATENCY_ARGS:-} --json "$OUT/overhead-latency.json" \
    2>&1 | tee "$OUT/overhead-latency.log" | grep -v '^ \|^{\|^}'
  timeout ${PROGRAMS_TIMEOUT:-240} python3 benchmarks/programs.py ${PROGRAMS_ARGS:---transports ipc,tcp --programs $PROGRAMS_BEFORE_50} --json "$OUT/programs.json" \
    2>&1 | tee "$OUT/programs.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = hardening ]; then
  # issue 35 on a GPU: the quota on every allocation path, the pool's, users' and fault
  # tests with the pool on the GPU, the attack tests; the attack benchmark's GPU parts
  # (a killed pool's CUDA workers, a worker's death told to a tcp client, session churn);
  # then the hot sync and whole programs, to see that the hardening costs nothing
  GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 300 python3 -m pytest -q -p no:cacheprovider -n 0 \
    -o addopts="-ra" --timeout 120 tests/gpu_backend/test_gpu_quota_paths.py tests/gpu_backend/test_users_pool.py \
    tests/gpu_backend/test_pool.py tests/gpu_backend/test_faults.py tests/project/test_smoke.py tests/gpu_backend/test_attack_control.py \
    tests/gpu_backend/test_faults_lifecycle.py tests/gpu_backend/test_fuzz_frames.py tests/gpu_backend/test_same_host.py \
    tests/gpu_backend/test_staging.py 2>&1 | tee "$OUT/gpu-hardening-tests.log" | tail -25
  timeout 240 python3 benchmarks/attack.py --devices 0 --parts death,detect,churn --sessions 100 \
    --json "$OUT/attack-gpu.json" 2>&1 | tee "$OUT/attack-gpu.log" | grep -v '^ \|^{\|^}'
  timeout ${LATENCY_TIMEOUT:-200} python3 benchmarks/overhead.py ${LATENCY_ARGS:---gemm 0 --transfer-mb 64 \
    --transfer-reps 1 --pipelined-ops 10000 --transports ipc,tcp --latency-reps 2000 --idle-reps 100} \
    --json "$OUT/overhead-latency.json" 2>&1 | tee "$OUT/overhead-latency.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = fastpath ]; then
  # issue 50 (the client's fast path for held stretches), side by side in each script: local
  # CuPy (and the body as one CUDA graph), the pool over ipc:// with replay on ("ipc"), the
  # early replay off ("ipc-noearly": GPUWB_EARLY_REPLAY=0), the fast path off
  # ("ipc-nofast": GPUWB_FAST_PATH=0), replay off ("ipc-nographs"). Each
  # table says each target and whether it is met. held_loops.py keeps every repeated
  # stretch held (--all-held: its figures are a held stretch's, whatever the timing would
  # keep; HELD_ARGS without it times them as a user's session does), the other two time them
  if [ -z "${FASTPATH_NO_TESTS:-}" ]; then   # early replay's and the fast path's tests on the GPU
    GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 300 python3 -m pytest -q -p no:cacheprovider -n 0 \
      -o addopts="-ra" --timeout 120 tests/kernelproxy/test_early_replay.py \
      tests/kernelproxy/test_stretch_fast_path.py 2>&1 | tee "$OUT/fastpath-tests.log" | tail -15
  fi
  timeout ${HELD_TIMEOUT:-150} python3 benchmarks/held_loops.py ${HELD_ARGS:---iterations 300 --rounds 3 \
    --all-held --transports ipc,ipc-noearly,ipc-nofast,ipc-nographs} --json "$OUT/held-loops.json" 2>&1 | tee "$OUT/held-loops.log" \
    | grep -v '^ \|^{\|^}'
  timeout ${REPLAY_TIMEOUT:-150} python3 benchmarks/replay_sync.py ${REPLAY_ARGS:---reps 2000 \
    --transports ipc,ipc-noearly,ipc-nofast,ipc-nographs} --json "$OUT/replay-sync.json" 2>&1 | tee "$OUT/replay-sync.log" \
    | grep -v '^ \|^{\|^}'
  timeout ${FAST_PROGRAMS_TIMEOUT:-280} python3 benchmarks/programs.py ${FAST_PROGRAMS_ARGS:---rounds 3 \
    --transports ipc,ipc-noearly,ipc-nofast,ipc-nographs} --json "$OUT/programs-fastpath.json" 2>&1 \
    | tee "$OUT/programs-fastpath.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = mix ]; then
  timeout ${MIX_TIMEOUT:-300} python3 benchmarks/gemm_mix.py ${MIX_ARGS:-} --json "$OUT/gemm-mix.json" \
    2>&1 | tee "$OUT/gemm-mix.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = floor ]; then
  # the hot sync taken apart: raw round trip, the op in another process, a generic op
  # protocol, the pool's executor behind a socket, the proxy (FLOOR_ARGS)
  timeout ${FLOOR_TIMEOUT:-300} python3 benchmarks/sync_floor.py ${FLOOR_ARGS:-} --json "$OUT/sync-floor.json" \
    2>&1 | tee "$OUT/sync-floor.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  timeout 400 python3 benchmarks/overhead.py --json "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.log" | head -16
  timeout 200 python3 benchmarks/worker_micro.py 2>&1 | tee "$OUT/worker-micro.log"
fi
if [ "$what" = graphs ]; then
  # CuPy's graph API (issue 50): its tests on the proxy and on local CuPy (the same bodies),
  # the graph calls' bad input, stretch replay's and the CUDA API's tests beside them, then
  # benchmarks/graph_api.py (local eager and graph against the proxy's)
  GPUWB_TEST_DEVICES=0 GPUWB_REFERENCE=cupy timeout 420 python3 -m pytest -q -p no:cacheprovider -n 0 \
    -o addopts="-ra" --timeout 120 tests/kernelproxy/test_graph_api.py tests/kernelproxy/test_cuda_api.py \
    tests/gpu_backend/test_bad_graph_input.py tests/gpu_backend/test_stretch_replay.py \
    2>&1 | tee "$OUT/graph-tests.log" | tail -40
  timeout 300 python3 benchmarks/graph_api.py --devices 0 ${GRAPH_ARGS:-} --json "$OUT/graph-api.json" \
    2>&1 | tee "$OUT/graph-api.log" | grep -v '^ \|^{\|^}'
fi
if [ "$what" = swap ]; then
  # issue 52 on a GPU: the swap tests with the pool on the GPU (both tiers), then
  # benchmarks/swap.py: a 10 GiB session swapped out and back through host memory (each way
  # of copying: staged, pinned) and through the swap directory, the pinned copy rate of the
  # same run as the reference (SWAP_ARGS; SWAP_DIR: where the file tier writes, default /tmp)
  GPUWB_TEST_DEVICES=0 timeout 300 python3 -m pytest -q -p no:cacheprovider -n 0 -o addopts="-ra" \
    --timeout 120 tests/gpu_backend/test_swap.py tests/gpu_backend/test_swap_host_tier.py \
    2>&1 | tee "$OUT/gpu-swap-tests.log" | tail -15
  timeout ${SWAP_TIMEOUT:-420} python3 benchmarks/swap.py --devices 0 ${SWAP_ARGS:---gib 10 --arrays 10 --cycles 3} \
    --swap-dir ${SWAP_DIR:-/tmp} --json "$OUT/swap.json" 2>&1 | tee "$OUT/swap.log" | grep -v '^{\|^}\|^   '
fi
if [ "$what" = swap-leak ]; then
  # issue 52: "1 000 swap cycles leak nothing": a 256 MiB session, half in host memory and
  # half on disk each cycle; resident memory, descriptors, files and the host budget before
  # and after (SWAP_LEAK_ARGS)
  timeout ${SWAP_LEAK_TIMEOUT:-560} python3 benchmarks/swap.py --devices 0 ${SWAP_LEAK_ARGS:---leak-cycles 1000 --leak-mib 256} \
    --swap-dir ${SWAP_DIR:-/tmp} --json "$OUT/swap-leak.json" 2>&1 | tee "$OUT/swap-leak.log" | grep -v '^{\|^}\|^   '
fi
if [ "$what" = suite ]; then
  # CuPy's own test suite, local CuPy vs the proxy on this GPU (issue 9; SUITE_ARGS picks
  # folders, limits, --baseline; SUITE_SUBSAMPLE= (empty) runs the selection in full); the
  # sdist comes from .cupy-suite/ where carried
  export GPUWB_CUPY_SUITE_CACHE=${GPUWB_CUPY_SUITE_CACHE:-$PWD/.cupy-suite}
  timeout ${SUITE_TIMEOUT:-560} python3 benchmarks/cupy_suite/run.py --sides local,proxy ${SUITE_SUBSAMPLE---subsample} \
    --keep "$OUT/suite" --json "$OUT/cupy-suite.json" ${SUITE_ARGS:-} 2>&1 \
    | tee "$OUT/cupy-suite.log" | tail -80
fi
done
