"""The GPU's SM clock and power over a run, sampled by ``nvidia-smi`` (benchmarks only).

An H100 running big float16 GEMMs sits at its power limit and lowers its clock, so the same
GEMM's device time changes with what else runs (docs/performance-log.md, run 44). Benchmarks
that compare rates across mixes record the clock beside them to say why a figure moved.
Where ``nvidia-smi`` is missing (no GPU) the sampler records nothing and says so.
"""

from __future__ import annotations

import statistics
import subprocess
import threading
import time

__all__ = ["ClockSampler"]


class ClockSampler:
    """``nvidia-smi`` reading GPU 0's SM clock and power every ``period_ms``, in a thread;
    ``between(t0, t1)`` gives the medians of the samples taken in a span of ``time.time()``."""

    def __init__(self, period_ms: int = 50) -> None:
        self.samples: list[tuple[float, float, float]] = []
        try:
            self._proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=index,clocks.sm,power.draw", "--format=csv,noheader,nounits",
                 "-lms", str(period_ms)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:   # no nvidia-smi: no samples
            self._proc = None
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 3 and parts[0] == "0":
                try:
                    self.samples.append((time.time(), float(parts[1]), float(parts[2])))
                except ValueError:   # "[N/A]" on a GPU that does not report power
                    pass

    def between(self, t0: float, t1: float) -> dict:
        got = [(clock, power) for t, clock, power in self.samples if t0 <= t <= t1]
        if not got:
            return {"sm_mhz": None, "power_w": None, "samples": 0}
        return {"sm_mhz": statistics.median(c for c, _ in got),
                "power_w": statistics.median(p for _, p in got), "samples": len(got)}

    def close(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait()

    def __enter__(self) -> "ClockSampler":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
