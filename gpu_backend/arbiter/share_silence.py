"""``share``'s rules for a session on the device that says nothing (arbiter/share.py takes
them from :class:`Silence`): a long op, whose worker places no marker till it ends, is
assumed to use its part of the device meanwhile, so that the users held back for it go as
it passes them. Split from share.py, whose state (the sessions, the share clock, the users
admitted) these methods read and move; they are ``SharePolicy``'s own, kept here by topic.

- **The assumption** (``assume_silent``, the pool's ``share_assume_silent``, on by default
  since run 330; a policy made alone has none): a session whose part of the device since
  its last charge passes ``silent_after`` is assumed that part, ``SILENT_CAP`` at most, as a
  lone holder is (``SharePolicy._charge_lone``); its next report settles it both ways.
- **When to look**: only while a session with work is held back, at most every quarter of
  ``silent_after``, counted from the last look (:meth:`_silent_deadline`).
- **Own-time devices** (the NumPy device): silent only past ``OWN_SILENT_AFTER``.
"""

from __future__ import annotations

import math

__all__ = ["Silence", "SILENT_CAP", "OWN_SILENT_AFTER"]

#: Most device seconds a silent session on the device is assumed between two of its reports
#: (:meth:`Silence._assume_silent`): more than any one op should take. At 250 ms, on the
#: NumPy device beside a training step whose single op ran 3 s, the assumption ran out and
#: the interactive user waited 3.7 s; at 2 s its p99.9 was 2.15 ms (docs/fair-share.md).
SILENT_CAP = 2.0
#: Where the device's reports are each session's own time (the NumPy device: a worker's CPU
#: time at its ops' ends), the part of the device past which a silent session is assumed to
#: use it, instead of the window: a worker silent for a few milliseconds there is waiting
#: for a core or its turn, not using the device, and assumed its part at the window, three
#: syncing users 1:2:4 on a 2-core machine gave the weight-4 user 0.52-0.54 of the time
#: charged while it had work against 0.65-0.67 without it (tests/gpu_backend/
#: test_share_pool.py's measure); a long NumPy op is silent for seconds, far past this.
OWN_SILENT_AFTER = 0.05


class Silence:
    """See the module's docstring. Mixed into ``SharePolicy``, which sets ``assume_silent``,
    ``silent_after`` (:func:`silent_after`) and ``_silent_looked`` (-inf) as it starts."""

    def _silent_deadline(self) -> float:
        """When to look at the silent sessions again (inf: no need): where a silent
        session's part may pass ``silent_after``, that long after the oldest charge on the
        device; at most every quarter of it, counted from the last look, not from now (which
        put the deadline always a quarter window ahead of the tick that asked, so the
        silent part was assumed only when another event settled: beside a 150 ms op with
        both other users held back, none came for the whole op). Only while someone with
        work is held back: counting every session not admitted, an idle one too, woke the
        arbiter every millisecond while anyone worked beside an idle notebook's session."""
        if not (self.assume_silent and self._on and self._held_back()):
            return math.inf
        return max(min(self.sessions[sid].charged_at for sid in self._on) + self.silent_after,
                   self._silent_looked + self.silent_after / 4)

    def _held_back(self) -> bool:
        """Whether a session with work is held back (asked and not admitted): only then can
        a silent session's part let anyone go."""
        return any(session.runnable and sid not in self.admitted
                   for sid, session in self.sessions.items())

    def _assume_silent(self) -> None:
        """Each session on the device whose part of it since its last charge passes
        ``silent_after`` (a long op: its worker reports at its markers, and none comes till
        the op ends) is assumed to have used that part, SILENT_CAP at most; its next report
        settles it both ways. Without it, the users ahead of it stay held back for the whole
        op: in the simulation, two syncing users beside a session reporting every 100 ms
        waited up to 94-96 ms between batches, 12 ms with it
        (tests/gpu_backend/test_share_silent.py). On an H200 beside GEMMs of ~150 ms (run
        330) dl-mix's trainer got 0.37 of its rate alone without it, 0.55 with it."""
        self._silent_looked = self.clock()
        for sid in self._on:
            if self._shares[sid][0] > self.silent_after:
                self._assume_part(sid, SILENT_CAP)

    def _assume_part(self, sid: str, cap: float) -> None:
        """*sid*'s part of the device since its last charge (at most *cap*), less what is
        assumed of it already, assumed now (its next report settles it). The share clock's
        integral of 1/k, not the wall time, which counts whole the time others shared it and
        was never given back (users 1:2:4 whose reads left the weight-4 user alone now and
        then: it was charged 2.2 times its part); counted from its last charge, a session
        back from idle was assumed its idle time."""
        session = self.sessions[sid]
        more = min(self._shares[sid][0], cap) - session.assumed
        if more > 0:
            self._assume(session, more)


def silent_after(window: float, own_time: bool) -> float:
    """A session's part of the device since its last charge past which it is silent: the
    share window, or OWN_SILENT_AFTER where reports are own time."""
    return max(window, OWN_SILENT_AFTER) if own_time else window
