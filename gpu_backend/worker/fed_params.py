"""A replay's parameters that are the values the replay before it read (worker/run_ahead.py).

A loop that reads a scalar and gives it to its next step — power iteration's
``n = float(norm(y)); x = y / n``, a normalisation, an index read by ``int(x.argmax())`` and
written through (``x[j] = 0``) — sends as a parameter of each replay the very value the
worker read for the client at the replay before. No model of the parameter's own history
guesses it (worker/float_steps.py: it follows the data), so a run ahead of such a step
missed every time and sat out. But the worker knows that value: it read it, and sent it
with the last reply. So where a parameter of a stretch's replay has been, at two replays
in a row, exactly (type and bits: ``same_param``) a value the replay before it read, at
the same place of the same stretch, its next run ahead takes the value that place read
this time.

The replay before may be the stretch's own last one (one stretch a step) or another
stretch's (stretches taking turns: a read closes the first, the value is a parameter of
the second). A guess the client's replay does not have costs only a run dropped.
"""

from __future__ import annotations

from typing import Any

from ..protocol.stretch_records import same_param

__all__ = ["FedParams"]

#: the types a fed parameter may have: the Python values a read gives (``float``,
#: ``int``, ``complex``; a bool decides, and two bools agree by chance too often)
_FED_TYPES = (float, int, complex)


class FedParams:
    """Which parameters of each held stretch are the values the replay before read."""

    def __init__(self) -> None:
        #: the values the replay just answered read: (its first seq, its values as the
        #: reply's ``v`` has them, ``(seq, value)``); set by the executor after each replay
        self._noted: tuple | None = None
        #: the replay answered before the one now: (its stretch, {op offset: value read})
        self._before: tuple | None = None
        #: by stretch: {parameter: (stretch, op offset)} that held at its last replay, and
        #: those that held at the last two (the rule a guess follows)
        self._seen: dict[int, dict] = {}
        self._rules: dict[int, dict] = {}

    def note(self, first: Any, values: list | None) -> None:
        """The replay whose ops are numbered from *first* read *values* (None: it failed,
        was cancelled, or the batch was no replay)."""
        self._noted = (first, values) if values else None

    def forget(self) -> None:
        """The session's replays go on from nothing learnt (its stretches let go)."""
        self._noted = self._before = None
        self._seen.clear()
        self._rules.clear()

    def reads_of(self, entry: Any) -> dict:
        """The values replay *entry* read, by op offset (empty: none noted for it: the
        steady lane's answers go without the executor)."""
        noted = self._noted
        if noted is None or noted[0] != entry.first:
            return {}
        first = entry.first
        return {seq - first: value for seq, value in noted[1]
                if type(seq) is int and type(value) in _FED_TYPES}

    def learn(self, entry: Any, reads: dict) -> None:
        """Replay *entry* has been answered, having read *reads*: which of its parameters
        the replay before read, and the rules that held twice in a row."""
        sid = entry.sid
        before = self._before
        self._before = (sid, reads)
        found: dict[int, tuple] = {}
        if before is not None and before[1]:
            source, values = before
            for n, param in enumerate(entry.params):
                if type(param) not in _FED_TYPES:
                    continue
                for offset, value in values.items():
                    if type(value) is type(param) and same_param(value, param):
                        found[n] = (source, offset)
                        break
        seen = self._seen.get(sid)
        self._seen[sid] = found
        held = {n: place for n, place in found.items() if seen is not None and seen.get(n) == place}
        if held:
            self._rules[sid] = held
        else:
            self._rules.pop(sid, None)

    def guess(self, sid: int, params: list, source: int, reads: dict) -> list:
        """*params*, stretch *sid*'s next replay's guessed parameters, with those its rules
        say the replay of stretch *source* just answered read (*reads*) taken from there."""
        rules = self._rules.get(sid)
        if not rules or not reads:
            return params
        for n, (from_sid, offset) in rules.items():
            if from_sid == source and offset in reads and n < len(params):
                params[n] = reads[offset]
        return params
