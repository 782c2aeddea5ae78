"""CuPy's test_default_memory_pool_threaded[False] through the pool, smaller, timed."""
import concurrent.futures, random, sys, time, faulthandler, os
sys.path.insert(0, os.environ["TREE"])
from gpu_backend.pool import LocalPool
import kernelproxy
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 50
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 8
faulthandler.dump_traceback_later(float(os.environ.get("DUMP_AFTER", "60")), exit=True)
with LocalPool(devices=os.environ.get("DEV", "cpu")) as pool:
    with kernelproxy.connect(pool.address, pool.token) as session:
        kernelproxy.install(session)
        import cupy
        from cupy.cuda.memory import alloc

        def random_allocation():
            return alloc(random.randint(1, 50_000))

        def make_allocations():
            allocations = [random_allocation() for _ in range(random.randint(1, 50))]
            first = [None, random_allocation()]
            curr = first
            for i in range(2, 50):
                curr = [curr, random_allocation()]
            first[0] = curr
            return allocations

        def func():
            for i in range(iters):
                _ = make_allocations()
                _ = make_allocations()

        t0 = time.perf_counter()
        if threads == 1:
            func()
        else:
          with concurrent.futures.ThreadPoolExecutor(threads) as tpe:
            for f in [tpe.submit(func) for _ in range(threads)]:
                f.result()
        print(f"{threads} threads x {iters}: {time.perf_counter() - t0:.2f} s", flush=True)
