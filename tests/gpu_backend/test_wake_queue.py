"""The queue helper threads hand work to the front door's loop through (auth_gate, cluster)."""

import select
import threading

from gpu_backend.runtime.wake_queue import WakeQueue


def test_what_threads_put_wakes_the_loop_and_is_taken_in_order():
    wake: WakeQueue[int] = WakeQueue()
    try:
        assert not select.select([wake.fd], [], [], 0)[0] and wake.take() == []
        threads = [threading.Thread(target=wake.put, args=(k,)) for k in range(5)]
        for t in threads:
            t.start()
            t.join()
        assert select.select([wake.fd], [], [], 1)[0]
        assert wake.take() == [0, 1, 2, 3, 4]
        assert not select.select([wake.fd], [], [], 0)[0]   # taken: quiet again
        for k in range(100_000 // 4):   # more words than the pipe holds: none blocks
            wake.put(k)
        assert len(wake.take()) == 100_000 // 4
    finally:
        wake.close()


def test_a_put_after_close_writes_nowhere():
    """A hashing thread that finishes after the pool stopped must not write into a
    descriptor closed and perhaps reused by then."""
    wake: WakeQueue[str] = WakeQueue()
    wake.close()
    wake.put("late")
    wake.close()   # (twice: harmless)
