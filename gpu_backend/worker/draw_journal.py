"""What a session's random generators have drawn, so that draws made ahead can be undone
exactly (docs/stretch-replay.md, "Random draws run ahead").

A replay run ahead (worker/run_ahead.py) is undone by freeing its results, which a random
draw defeats: the generator has moved on, and the client's own next draw would get other
numbers than local CuPy's. cuRAND cannot be set back where it was (``curandSetGeneratorOffset``
then a draw is not what the generator that never drew ahead gives for most sizes, H100 run
42, benchmarks/curand_offset_probe.py), and its state cannot be copied. But a generator is a
function of its seed and the draws made since: CuPy's ``RandomState.seed`` resets cuRAND's
state and ``_rk_seed`` alike, and each method draws as its arguments say. So the journal keeps,
per ``RandomState`` of the session, the seed it was last given (the client always sends an
integer: kernelproxy/random/_generator.py) and the draws since (method and plain arguments).
Draws made ahead are kept aside: answered, they join the journal; dropped, the generator is
marked stale, and before its next use it is seeded again and its journal's draws made again
(their arrays freed at once): the state it would have had, bit for bit, for the same calls
make the same cuRAND and CuPy kernel calls.

A ``Generator`` (``default_rng``) keeps its whole state in its bit generator, one device
array on a GPU (CuPy's ``_cuRANDGenerator._state``: 13 MB on an H200, a copy of a few
microseconds): a run ahead copies it at the Generator's first draw (Device.generator_state)
and puts it back where the run is dropped, or where its stretch's replay differed in its
parameters (that replay then draws again, the same numbers); answered, the copy is dropped.
``binomial``, which keeps a state of its own, is never drawn ahead.

What is not journaled, and so never drawn ahead: a method given an array (``normal(loc=a)``,
``choice(a)``, ``shuffle``), a generator past MAX_DRAWS draws since its seed (its redo would
cost more than a few milliseconds: it draws ahead again once seeded), and a draw that failed
(its generator may have moved: journaled again once seeded). The bit generators' own
``random_raw`` is never drawn ahead.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..protocol.stretch_records import same_params

__all__ = ["DrawJournal", "MAX_DRAWS", "DRAW_METHODS", "GENERATOR_CLASS", "STATE_CLASS",
           "STATE_DRAWS", "CAPTURED_DRAWS"]

#: the remote class whose draws are journaled (api.OBJECTS)
GENERATOR_CLASS = "random.RandomState"
#: the remote class whose state is copied before a run ahead draws from it, and put back
#: where that run is dropped: a ``Generator``'s bit generator keeps its state in one device
#: array (CuPy's ``_cuRANDGenerator._state``; a NumPy bit generator's ``state`` on the NumPy
#: device), which the device copies (Device.generator_state)
STATE_CLASS = "random.Generator"
#: Generator methods drawn ahead: those that change nothing but the bit generator's state
#: (``binomial`` keeps a state of its own, ``_binomial_state``: never drawn ahead)
STATE_DRAWS = frozenset("""
    random uniform integers beta chisquare dirichlet exponential f geometric hypergeometric
    logseries standard_exponential poisson power standard_normal gamma standard_gamma
""".split())
#: Generator methods the worker's graphs capture (worker/eager_ops.py), given plain arguments
#: and no ``out=``: CuPy's kernel takes the bit generator's states as a device array and moves
#: them there, so a graph's launch draws the next numbers, as an eager call would (H200 runs
#: 162-163, benchmarks/curand_capture_probe.py --generator-api: nine cases, five launches
#: each, bitwise); and their CuPy code copies nothing from the host (``uniform``'s bounds
#: become device scalars without a copy). Not those that take their parameters as arrays
#: (``standard_gamma``, ``poisson``, ``beta``, …: ``_launch`` uploads each array's metadata,
#: which CuPy refuses under capture, run 163), nor a ``RandomState``'s: cuRAND's host API
#: keeps its position on the host (run 161: a launch after the first gives other numbers).
CAPTURED_DRAWS = frozenset({"random", "uniform", "standard_normal", "standard_exponential",
                            "exponential", "integers"})
#: the most draws since its seed a generator's journal keeps: past it the generator is no
#: longer drawn ahead until it is seeded again (a redo of MAX_DRAWS draws of CuPy's Python
#: and their kernels: ~20 µs each on a GPU host, ~40 ms at most)
MAX_DRAWS = 2048
#: RandomState methods that draw from the generator alone, given plain arguments
DRAW_METHODS = frozenset("""
    beta binomial chisquare dirichlet exponential f gamma geometric gumbel hypergeometric
    laplace logistic lognormal logseries negative_binomial noncentral_chisquare noncentral_f
    normal pareto poisson power rayleigh standard_cauchy standard_exponential standard_gamma
    standard_normal standard_t triangular uniform vonmises wald weibull zipf
    rand randn randint random_sample tomaxint _interval permutation choice
""".split())
_PLAIN = (int, float, complex, bool, str, type(None), np.generic, np.dtype, type)
_PLAIN_TYPES = frozenset(_PLAIN)
_SEQUENCES = (tuple, list)


def plain(value: Any) -> bool:
    """Whether *value* is made only of numbers, strings, dtypes and tuples or lists of them
    (no array, no object): a draw given it can be made again from the journal."""
    kind = type(value)
    if kind in _PLAIN_TYPES:   # (the common case, a set's look-up: it runs at every draw)
        return True
    if kind in _SEQUENCES:
        for v in value:
            if type(v) not in _PLAIN_TYPES and not plain(v):
                return False
        return True
    return isinstance(value, _PLAIN)


def plain_call(args: Any, kwargs: dict) -> bool:
    """Whether a call's arguments and keyword arguments are all :func:`plain`."""
    return plain(args) and plain(tuple(kwargs.values()))


class _Log:
    """One generator's journal: its seed (None: unknown, not journaled until seeded), the
    draws since, the draws made ahead not yet answered, and whether its state is stale."""

    __slots__ = ("seed", "draws", "ahead", "served", "stale")

    def __init__(self, seed: Any) -> None:
        self.seed = seed if type(seed) is int else None
        self.draws: list | None = [] if self.seed is not None else None
        #: the draws of the replay run ahead now: (call, its array)
        self.ahead: list = []
        #: the draws of a run ahead its stretch's replay did not match, handed on to that
        #: replay's same calls (DrawJournal.hand_on), first first
        self.served: list = []
        self.stale = False


class DrawJournal:
    """The journals of a session's generators, and the draws of the replay run ahead now."""

    def __init__(self, device: Any = None) -> None:
        #: the device whose Generators' states are copied and put back (None: never)
        self.device = device
        self._logs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        #: the session's Generators (STATE_CLASS), and the states copied by the run ahead
        #: now, by id: (the Generator, its state before its first draw of that run)
        self._stateful: weakref.WeakSet = weakref.WeakSet()
        self._copies: dict[int, tuple] = {}
        #: whether a replay is being run ahead now (its draws are kept aside)
        self.speculating = False
        #: whether the replay run ahead drew anything (kept aside or a state copied): else
        #: commit, hand_on and undo, called for every replay run ahead, have nothing to do
        self._pending = False
        #: whether draws of a dropped run ahead may be waiting for their calls (hand_on)
        self.serving = False
        #: where handed-on draws are refused by their call (its arguments differ: a
        #: distribution's scalar the guess missed), the set the stretch they were drawn for
        #: joins, and that stretch (hand_on's *refused*)
        self._refused: tuple | None = None
        #: generators whose state was made again (stale ones before their next use)
        self.redone = 0
        #: whether a replay that draws may be run ahead at all (``GPUWB_DRAWS_AHEAD``)
        self.enabled = True
        #: the draws of a message committed ahead of its coming (worker/pushed_replies.py),
        #: until it comes (:meth:`confirm`) or is rolled back (:meth:`retract`): each
        #: journal's length before them, and the Generators' states before them
        self._tentative: list = []
        self._tentative_copies: dict[int, tuple] = {}

    def _log(self, obj: Any) -> _Log | None:
        try:
            return self._logs.get(obj)
        except TypeError:   # (None, or an object that takes no weak reference)
            return None

    # ------------------------------------------------------------ every call
    def created(self, obj: Any, args: list, kwargs: dict) -> None:
        """A generator was made with *args*, *kwargs* (``RandomState(seed, method=...)``)."""
        seed = args[0] if args else kwargs.get("seed")
        try:
            self._logs[obj] = _Log(seed)
        except TypeError:   # (an object that takes no weak reference: never drawn ahead)
            pass

    def created_stateful(self, obj: Any) -> None:
        """A Generator was made: its draws may be run ahead (their state copied first)."""
        try:
            self._stateful.add(obj)
        except TypeError:
            pass

    def before_stateful(self, obj: Any, member: str, args: list, kwargs: dict) -> None:
        """Before a Generator's method runs: while running ahead, its state is copied at its
        first draw (put back by :meth:`undo`); a call that could not be undone so is refused."""
        if not self.speculating:
            return
        if member not in STATE_DRAWS or not plain_call(args, kwargs) or not self._is_stateful(obj):
            raise NotUndoable(f"{member} cannot be drawn ahead")
        if id(obj) not in self._copies:
            state = self.device.generator_state(obj) if self.device is not None else None
            if state is None:
                raise NotUndoable("this generator's state cannot be copied")
            self._copies[id(obj)] = (obj, state)
            self._pending = True

    def _is_stateful(self, obj: Any) -> bool:
        try:
            return obj in self._stateful
        except TypeError:
            return False

    def before(self, obj: Any, member: str, args: list, kwargs: dict) -> None:
        """Before a method of *obj* runs: a stale generator is made again (but for a seed,
        which resets it anyway); while running ahead, a call that could not be undone is
        refused (NotUndoable: the run ahead fails and is dropped)."""
        log = self._log(obj)
        if self.speculating and (log is None or log.draws is None or log.stale or log.served
                                 or member not in DRAW_METHODS or not plain_call(args, kwargs)
                                 or len(log.draws) + len(log.ahead) >= MAX_DRAWS):
            raise NotUndoable(f"{member} cannot be drawn ahead")
        if log is not None and log.stale and member != "seed":
            self._redo(obj, log)

    def serve(self, obj: Any, member: str, args: list, kwargs: dict) -> Any:
        """The array a dropped run ahead drew for this very call, where one was handed on
        (:meth:`hand_on`) and this is the next of them: the call is then the client's, and
        journaled. Else None: the call runs (any other call first makes the generator stale:
        what was handed on is not its next state)."""
        if not self.serving:
            return None
        log = self._log(obj)
        if log is None or not log.served:
            return None
        (m, a, k), array = log.served[0]
        # (strictly the same arguments: a distribution's scalars are parameters, so a
        # dropped run's draw may have had a scale one bit, or a zero's sign, away)
        if m == member and same_params(a, args) and k == kwargs and log.draws is not None:
            del log.served[0]
            log.draws.append((m, a, k))
            return array
        if m == member and self._refused is not None:   # (the same call, other arguments:
            into, sid = self._refused                    # the draw took the scalar missed)
            into.add(sid)
        log.served = []
        log.stale = True
        return None

    def after(self, obj: Any, member: str, args: list, kwargs: dict, result: Any = None) -> None:
        """A method of *obj* ran: journaled (a seed starts the journal afresh; a draw given
        plain arguments joins it, or the draws made ahead; anything else ends it)."""
        log = self._log(obj)
        if log is None:
            return
        if member == "seed":
            seed = args[0] if args else kwargs.get("seed")
            log.seed = seed if type(seed) is int else None
            log.draws = [] if log.seed is not None else None
            log.ahead = []
            log.stale = False
            return
        if log.draws is None:
            return
        entry = (member, tuple(args), dict(kwargs))
        if self.speculating:   # (its call checked by before)
            log.ahead.append((entry, result))
            self._pending = True
            return
        if member not in DRAW_METHODS or not plain_call(args, kwargs):
            log.draws = None   # (an array given, a shuffle: not made again; until seeded)
            return
        if len(log.draws) >= MAX_DRAWS:
            log.draws = None
        else:
            log.draws.append(entry)

    def failed(self, obj: Any) -> None:
        """A method of *obj* raised: its generator may have moved part-way; not journaled
        until seeded again (while running ahead: made again before its next use)."""
        log = self._log(obj)
        if log is None:
            return
        if self.speculating and log.draws is not None:
            log.stale = True
        else:
            log.draws = None

    # ------------------------------------------------------------ running ahead
    def undoable(self, objs: list) -> bool:
        """Whether draws from each of *objs* could be made ahead and undone now."""
        if not self.enabled:
            return False
        for obj in objs:
            if self._is_stateful(obj):
                if self.device is None:
                    return False
                continue
            log = self._log(obj)
            if log is None or log.draws is None or len(log.draws) >= MAX_DRAWS \
                    or log.stale or log.served:
                return False
        return True

    def committable(self) -> bool:
        """Whether the draws of the replay run ahead could be committed tentatively now
        (:meth:`commit`): every journal they extend stays within MAX_DRAWS (a journal that
        ended could not be taken back), none is handed on, none is tentative already."""
        if self._tentative or self._tentative_copies:
            return False
        if not self._pending:
            return True
        return all(not log.ahead or (log.draws is not None and not log.served
                                     and len(log.draws) + len(log.ahead) <= MAX_DRAWS)
                   for log in list(self._logs.values()))

    def commit(self, tentative: bool = False) -> None:
        """The replay run ahead was answered: its draws are the client's. *tentative*: its
        message was committed ahead of its coming (worker/pushed_replies.py), and these
        draws are taken back if that message never comes (:meth:`retract`); only where
        :meth:`committable` said so. A commit that is not tentative confirms any that was."""
        if not tentative and (self._tentative or self._tentative_copies):
            self.confirm()
        if not self._pending:
            return
        self._pending = False
        if tentative:
            self._tentative_copies = dict(self._copies)
        self._copies.clear()
        for log in list(self._logs.values()):
            if log.ahead:
                if tentative and log.draws is not None:
                    self._tentative.append((log, len(log.draws)))
                if log.draws is not None and len(log.draws) + len(log.ahead) <= MAX_DRAWS:
                    log.draws.extend(entry for entry, _array in log.ahead)
                else:
                    log.draws = None
                log.ahead = []

    def confirm(self) -> None:
        """The message committed ahead came: its draws are the client's for good."""
        self._tentative = []
        self._tentative_copies = {}

    def retract(self) -> None:
        """The message committed ahead will not come (rolled back): its draws are taken
        back — each generator it drew from made again from its journal as it was before
        them, at its next use; each Generator's state put back. After :meth:`undo` of the
        replay run ahead since, whose draws came after these."""
        for log, length in self._tentative:
            if log.draws is not None:
                del log.draws[length:]
                log.stale = True
            else:   # (never: committable keeps a tentative journal from ending)
                raise RuntimeError("a random generator's state was lost: seed it again")
        copies = self._tentative_copies
        self._tentative, self._tentative_copies = [], {}
        for obj, state in reversed(list(copies.values())):   # (_put_back's order)
            self.device.set_generator_state(obj, state)

    def hand_on(self, keep_out: set, refused: tuple | None = None) -> bool:
        """The replay run ahead was dropped for its stretch's own replay with other
        parameters (a loop's scalar that the guess missed): where its draws take no
        parameter, that replay's same calls are given the arrays drawn ahead, in order, and
        the generators need not be made again. Not an array of *keep_out* (ids of the
        graphs' own buffers, which the next replays overwrite): those generators are stale,
        made again at their next use. Whether every draw was handed on.

        *refused*, ``(a set, the stretch's id)``: where a draw handed on meets its call with
        other arguments (the draw took the missed scalar itself: ``rs.normal(0.0, sigma_i,
        n)``, whose scale cuRAND applies inside its kernel), the stretch joins the set, so
        that the run ahead does not draw for it again (each such miss makes the generators
        again from their journals: a Langevin loop's annealed noise made every step's run
        ahead a redo of all its draws since the seed, H200 run 191)."""
        if not self._pending:
            return True
        self._pending = False
        self._refused = refused
        self._put_back()   # (a Generator's state is put back: the replay draws again)
        whole = True
        for log in list(self._logs.values()):
            if log.ahead:
                if any(id(array) in keep_out for _entry, array in log.ahead):
                    log.stale, whole = True, False
                else:
                    log.served = log.ahead
                    self.serving = True
                log.ahead = []
        return whole

    def undo(self) -> None:
        """The replay run ahead was dropped: each generator it drew from is stale, made
        again from its journal before its next use; each Generator's state is put back.
        (Draws handed on and not asked for are found by :meth:`serve` at the next call.)"""
        if not self._pending:
            return
        self._pending = False
        self._put_back()
        for log in list(self._logs.values()):
            if log.ahead or log.served:
                log.ahead, log.served = [], []
                log.stale = True
        self.serving = False

    def _put_back(self) -> None:
        """Each Generator's state as it was before the run ahead, the first copied last: two
        Generators over one bit generator were copied at their first draws, the second's
        copy after the first's draws, and the first's is the state before them all."""
        copies, self._copies = self._copies, {}
        for obj, state in reversed(list(copies.values())):
            self.device.set_generator_state(obj, state)

    def _redo(self, obj: Any, log: _Log) -> None:
        """Seed *obj* again and make its journal's draws again, their arrays dropped. One
        that fails (out of memory) leaves it stale, tried again at its next use: the error
        is the op's that asked."""
        if log.draws is None:   # (never: a journal ends only with nothing drawn ahead)
            raise RuntimeError("a random generator's state was lost: seed it again")
        obj.seed(log.seed)
        for member, args, kwargs in log.draws:
            getattr(obj, member)(*args, **kwargs)
        log.stale = False
        self.redone += 1


class NotUndoable(RuntimeError):
    """A call a replay run ahead cannot undo: that run is dropped, the client's replay runs
    as ever."""
