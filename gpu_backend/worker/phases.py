"""Where a live worker's time goes per message, phase by phase (a diagnostic, off by default).

``GPUWB_WORKER_PHASES=DIR`` makes each session worker time the phases of every
message it serves (received, opened, run, reply encoded, sent, after the reply)
and whether the message was found by the spin or woke a sleeping poll, and
write the medians to ``DIR/phases-PID.json`` when the session ends, with each
message's span (``perf_counter`` at its start and at its last phase: the host's
monotonic clock, which benchmarks/step_profile.py lays beside the client's). In-process
benchmarks (``benchmarks/worker_parts.py``) time the executor alone; this shows
what the same batch costs inside the serving process.

The server and the executor are handed a recorder; the default, :data:`NO_PHASES`,
records nothing (a call that returns, per phase), and :class:`PhaseClock` is the one
that times (``WorkerSettings.phases_dir``).
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import time
from time import perf_counter

__all__ = ["PhaseRecorder", "NO_PHASES", "PhaseClock", "read_summaries"]


class PhaseRecorder:
    """Where the serving loop says which phase of a message it has reached: this one
    does nothing with it (the default, :data:`NO_PHASES`)."""

    def start(self, slept: bool) -> None:
        """A message arrived; *slept*: it woke the worker from a sleeping poll."""

    def mark(self, name: str) -> None:
        """The message's phase *name* has ended."""

    def end(self) -> None:
        """The message is done with (its reply sent)."""

    def write(self) -> None:
        """The session ended: keep what was recorded."""


class _NoPhases(PhaseRecorder):
    """The recorder of a worker that measures nothing. Its ``mark`` is a builtin that
    takes the phase's name and does nothing visible with it (``id``): a replayed message
    passes ~17 marks, and a Python method's frame for each was ~3 000 instructions a
    message (benchmarks/worker_instructions.py)."""

    mark = staticmethod(id)


#: The recorder of a worker that measures nothing.
NO_PHASES: PhaseRecorder = _NoPhases()


class PhaseClock(PhaseRecorder):
    """Times each phase (perf_counter) and writes the medians to *target* at the end."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.rows: list[list] = []
        self._row: list | None = None
        self.woke = 0      # messages that found the worker asleep in its poll
        self.spun = 0      # ... and that its spin caught

    def start(self, slept: bool) -> None:
        if slept:
            self.woke += 1
        else:
            self.spun += 1
        self._row = [("start", perf_counter())]

    def mark(self, name: str) -> None:
        if self._row is not None:
            self._row.append((name, perf_counter()))

    def end(self) -> None:
        if self._row is not None and len(self._row) > 1:
            self.rows.append(self._row)
        self._row = None

    def summary(self) -> dict:
        """Median microseconds of each phase (from the mark before it), over the messages
        that went through every phase seen."""
        spans: dict[str, list[float]] = {}
        for row in self.rows:
            for (_, before), (name, at) in zip(row, row[1:]):
                spans.setdefault(name, []).append((at - before) * 1e6)
        return {"messages": len(self.rows), "woke": self.woke, "spun": self.spun,
                "median_us": {name: statistics.median(v) for name, v in spans.items()},
                "spans": [[row[0][1], row[-1][1]] for row in self.rows],
                # (each message's phases, µs, by its start: a benchmark keeps the messages
                # of its timed rounds, their warm-up's captures left out: program_phases.py)
                "rows": [[row[0][1], [[name, round((at - before) * 1e6, 2)]
                                      for (_, before), (name, at) in zip(row, row[1:])]]
                         for row in self.rows]}

    def write(self) -> None:
        with open(os.path.join(self.target, f"phases-{os.getpid()}.json"), "w") as out:
            json.dump(self.summary(), out, indent=1)


def read_summaries(directory: str, count: int, patience: float = 10.0) -> list[dict]:
    """The summaries the workers wrote to *directory* (each as its session ended), waiting
    up to *patience* seconds for *count* of them: a worker on a GPU may take seconds to wind
    down, and a file still being written is read again."""
    deadline = time.monotonic() + patience
    while True:
        found = []
        for path in glob.glob(os.path.join(directory, "phases-*.json")):
            try:
                with open(path) as fh:
                    found.append(json.load(fh))
            except ValueError:   # still being written
                pass
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)
