"""Pools whose workers run a loop's next replay ahead (worker/run_ahead.py), and a loop run
on a session of one beside a session without replay: what the tests of the run ahead share
(tests/gpu_backend/test_run_ahead.py, test_run_ahead_alone.py)."""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from .differential import TEST_DEVICES
from .quiet_gc import no_collection


@contextmanager
def pool_running_ahead(policy: str, read_now: bool = False, beside: bool = True,
                       swap_dir: Path | None = None, **variables: str) -> Iterator[LocalPool]:
    """A pool of *policy* whose workers run ahead whatever a replay's device time (on the
    NumPy device it is the host's, more than the defaults allow on a slow VM); with
    *read_now*, they also make a run ahead's closing reads at once; not *beside*, only with
    no lease or alone on the device (``GPUWB_RUN_AHEAD_BESIDE=0``); with *swap_dir*, a
    session idle for 0.3 s is swapped out there (files only); *variables*, more of
    the workers' settings. The variables are the workers' (a pool's workers take the
    environment as the pool started), set while the pool starts only: a pool another test
    starts meanwhile has none of them."""
    with ExitStack() as stack:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("GPUWB_RUN_AHEAD_US", "1e9")
            if read_now:
                env.setenv("GPUWB_READ_AHEAD_US", "1e9")
            if not beside:
                env.setenv("GPUWB_RUN_AHEAD_BESIDE", "0")
            for name, value in variables.items():
                env.setenv(name, value)
            swap = {} if swap_dir is None else \
                {"swap_idle": 0.3, "swap_dir": swap_dir, "swap_host_memory": 0}
            pool = stack.enter_context(LocalPool(devices=TEST_DEVICES, lease_timeout=20.0,
                                                 memory_limit=1 << 28, policy=policy, **swap))
        yield pool


def beside_no_replay(pool: LocalPool, loop, **settings) -> tuple:
    """*loop(cp)* on a fresh session (*settings*) and on one without replay: both results,
    and the first session's stretch figures."""
    with Session(pool.address, pool.token,
                 settings=SessionSettings(replay_measured=False, **settings)) as s:
        with no_collection():
            got = loop(module_for(s))
        figures = s.memory_info()["stretches"]
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as s:
        with no_collection():
            want = loop(module_for(s))
    return got, want, figures
