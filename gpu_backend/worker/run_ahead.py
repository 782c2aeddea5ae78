"""A held stretch's next replay, run before the client asks for it (docs/stretch-replay.md,
"Run ahead").

A loop's replays follow each other: the client reads the last replay's value, runs its
Python, issues the body's first ops from its template and sends the next replay (early, at
its first op that changes: kernelproxy/early_replay.py). Measured on H200 hosts
(2026-11-25), the worker then idled 100-130 µs an iteration of a 20-op loop, waiting for
that message, and the replay, once it came, took it 130-150 µs more to answer: the two
took turns. Once a replay's reply is sent, the next replay's inputs are known to the worker
as well as the client's template knows them (the rule GraphCopies.learn finds: a carried
result, or the same array again) and its parameters are most often the last ones. So the
worker runs it at once, with those, and keeps what it gives under provisional ids; when the
client's replay comes and names the same stretch, the same input handles and the same
parameters (the same type, value and sign of zero), its answer is ready: the results take
the client's handles, the values their ops' numbers; its closing reads (the loop's sync)
are made then, for the device has finished by then, and the worker need not wait for it
after the reply (but at once where the replay is short, or short beside its client's recent
gaps: an interactive user's request then finds its value read). Anything else — another stretch,
other inputs or parameters, any batch that is not a replay — drops what was run ahead
(its arrays go back to the pool) and the message runs as ever.

Exact by construction: only a stretch that changes nothing but its own results and the
inputs it writes in place (StretchReplay.ahead_safe: no random draws, no object's methods,
no ``out=``) is run ahead, and nothing else can change its inputs in between, for only this
session's messages change its arrays and any message but the matching replay drops the
run. The inputs it writes (``w -= lr * grad``) are written into its graphs' buffers only,
and copied into the client's arrays when the client's replay comes (StretchGraphs.run's
``run_ahead``): a run that is dropped has changed nothing the client holds. It runs
only where it waits for no turn and nobody waits for its own (no lease, alone on the
device, or beside others under a standing grant not told to stop: Pacer.may_run_ahead,
begin_ahead), and its device time is this session's, charged as a replay's.
"""

from __future__ import annotations

from collections import deque
from itertools import pairwise
from time import perf_counter
from typing import Any, Sequence

from ..protocol import messages as m
from ..protocol.stretch_records import same_params
from .batch_results import BatchResults
from .fed_params import FedParams
from .float_relations import next_floats
from .float_steps import KEPT, float_values
from .narrow_floats import NARROW_FLOATS, narrowed
from .phases import NO_PHASES
from .stretches import HeldStretch, ReplayEntry, Slot

__all__ = ["RunAhead", "PROVISIONAL", "MAX_SECONDS", "READ_NOW_SECONDS", "MAX_BYTES", "LIMIT_SHARE", "max_bytes",
           "MAX_MISSES", "SIT_OUT", "MISSES_FROM", "GAP_SHARE", "GAPS_KEPT", "guess_params",
           "speculating", "speculated"]

#: the most device time a replay run ahead may take (its last measured one's: Pacer.
#: replay_estimate): a run the client never asks for (the loop ended) wastes at most this
MAX_SECONDS = 0.002
#: the most device time (its last measured replay's) of a replay run ahead whose closing
#: reads (``float`` of a result, ``item``) are made at once, waiting for the device, instead
#: of when the client's replay comes (``GPUWB_READ_AHEAD_US``): the worker would otherwise wait
#: for the client's next message, and the answer then skips the reads (a device-to-host copy
#: and its call, ~15 µs of an H100 host's worker on the loop's path; run 65). Longer replays'
#: reads would keep the worker from the next message: they wait for the client's replay. So
#: do a replay's that came early (header ``S``, kernelproxy/early_replay.py): the client sends
#: the next one at its first op and issues the rest meanwhile, so the worker waiting for its
#: device would keep that message waiting (chain20 on an H100 with every read made at once,
#: bound 300 µs: 166 -> 201 µs an iteration, run 75; 15 % lost at 100 µs, run 70).
READ_NOW_SECONDS = 50e-6
#: ... or at most 1/GAP_SHARE of the shortest of its client's last GAPS_KEPT gaps (from a run
#: ahead's start, right after a reply, to the replay that matched it; GAPS_KEPT seen first):
#: a client away that long (an interactive user's requests, a person's cells) finds its
#: values read, and its request waits for no device, nor for others' kernels beside it
#: (issue 51: under `none` and `share` alike an interactive request beside a saturating user
#: read its value on its path, 0.6-0.9 ms at the median, H200 run 95); a loop's tighter
#: gaps keep the bound above (``GPUWB_READ_GAP_SHARE``; 0: the bound alone, as before)
GAP_SHARE = 4
GAPS_KEPT = 4
#: the most bytes its kept results may hold beside the last ones: MAX_BYTES, or a
#: LIMIT_SHARE-th of the session's memory limit where that is more (``max_bytes``). A
#: run the client never asks for holds them until its next message. (16 MiB alone kept a
#: loop whose named temporaries the user's variables hold from one iteration to the next
#: from ever running ahead: n-body's step at 2 048 bodies keeps ~100 MB of them, and its
#: worker waited out its 0.5 ms graph at every replay, H100 run 41.)
MAX_BYTES = 16 << 20
LIMIT_SHARE = 8


#: runs ahead of one stretch in a row that the client's replay then did not match, after
#: which the stretch sits out SIT_OUT replays unrun ahead: a loop whose scalar changes in a
#: way guess_params does not follow no longer spends the worker's time after each reply on
#: a run it drops (the client's next message may come while it runs: the hot sync's does)
MAX_MISSES = 3
SIT_OUT = 32
#: ... counted only once the stretch has this many replays' parameters behind its guess: a
#: model's warm-up (a harmonic float's window, a float made from another's run of values:
#: worker/float_steps.py, float_relations.py) misses its first few guesses, and those three
#: in a row had the stretch sit out before its guess could follow (an inverse-time scale in
#: a 40-step loop was never run ahead)
MISSES_FROM = 9
#: ... twice as many each time it misses MAX_MISSES in a row again with no run ahead answered
#: between (a scale annealed as ``eta / (1 + decay * step)``, which no guess follows: each
#: miss of a run ahead that drew from a RandomState makes it again from its journal), up to
#: this many
MAX_SIT_OUT = 1024


def guess_params(history: Sequence[list] | None, last: list, types: Sequence | None = None) -> list:
    """The next replay's parameters, guessed from the stretch's last replays' as a loop's
    scalars go (*history*: the parameters of those before the last, oldest first; *last*:
    the last one's): an int that changed by d goes on by d (a step count); a float that
    changed goes on as worker/float_steps.py guesses from its last values (``step * 0.5``,
    ``t += dt``, ``i * dt``, ``lam *= 0.98``, ``lr * lam``, the floats of one replay guessed
    together), rounded to its NumPy type where *types* (StretchRecords.param_types) says it
    was a narrower float (``np.float32(i * dt)``, a kernel's time: the values it comes from
    step in double, the client sends them rounded); any other value stays as last. A guess
    the client's replay does not have exactly (``same_params``: type, value, sign of zero)
    costs only a run dropped."""
    before = history[-1] if history else None
    if before is None or before == last or len(before) != len(last):   # (most loops: at once)
        return list(last)
    guess = []
    floats, runs = [], []   # (the floats that changed, guessed together: float_steps.next_floats)
    for i, (b, a) in enumerate(zip(before, last)):
        kind = type(a)
        if (kind is int or kind is float) and type(b) is kind and a != b:
            if kind is int:
                guess.append(a + (a - b))
            else:
                floats.append(i)
                runs.append(float_values(history, i) + [a])
                guess.append(a)
        else:
            guess.append(a)
    for i, run, nxt in zip(floats, runs, next_floats(runs) if runs else ()):
        narrow = types[i] if types is not None and i < len(types) else None
        guess[i] = narrowed(narrow, run, nxt) if narrow in NARROW_FLOATS else nxt
    return guess


#: the first of the provisional ids a replay run ahead keeps its results under (result
#: slot n under PROVISIONAL + n): far above any id a client numbers its arrays with
PROVISIONAL = 1 << 62


def max_bytes(memory_limit: int | None) -> int:
    """The most bytes a run ahead's kept results may hold, for a session whose memory is
    limited to *memory_limit* bytes (None: not limited; then MAX_BYTES)."""
    return MAX_BYTES if not memory_limit else max(MAX_BYTES, memory_limit // LIMIT_SHARE)


class _Ahead:
    """What a replay run ahead gave: its stretch, the inputs and parameters it ran with,
    its graph, and its results (values numbered from 0, arrays under provisional ids)."""

    __slots__ = ("sid", "inputs", "params", "graph", "results", "ran", "slots", "reads",
                 "writes", "measured_from", "read_values", "started", "alone", "read_wait",
                 "after", "deferred", "read_slots", "read_mark", "undo")

    def __init__(self, sid: int, inputs: list, params: list, graph: Any, results: BatchResults,
                 ran: int, slots: int, reads: Any, writes: list,
                 measured_from: float | None, started: float, alone: bool) -> None:
        self.sid, self.inputs, self.params, self.graph = sid, inputs, params, graph
        #: what its assignments into inputs written where they are overwrote, put back
        #: where it is dropped (StretchGraphs.take_undo)
        self.undo: list = []
        self.results, self.ran, self.slots = results, ran, slots
        #: its closing reads, made when the client's replay comes (StretchGraphs.run_reads)
        self.reads = reads
        #: the inputs it wrote, copied back when the client's replay comes (write_back)
        self.writes = writes
        #: the pacer's device time before it, where it is measured (Pacer.replay_estimate)
        self.measured_from = measured_from
        #: when it began, right after the reply (its client's gap counts from here:
        #: RunAhead._reads_now), whether nobody was paced against its session then (its
        #: measurement is then its own: Pacer.learn), and how long the worker waited for
        #: its reads made at once (not the client's gap)
        self.started, self.alone, self.read_wait = started, alone, 0.0
        #: its closing reads' values, numbered from 0, where they were made at once (then
        #: ``reads`` is None: RunAhead.start, READ_NOW_SECONDS)
        self.read_values: list | None = None
        #: the stretch whose replay it was run after, where it is another's (RunAhead's
        #: ``follows``); None: its own stretch's next replay
        self.after: int | None = None
        #: its closing reads wait for its client's message already there, made before its
        #: reply is pushed (the steady lane's: SteadyLane._read_ahead)
        self.deferred = False
        #: the read graph launched after its graphs, whose slots then hold its closing
        #: reads' values (the steady lane's runs: worker/lane_reads.py); None: none was
        self.read_slots = None
        #: where a later step may be launched before these reads (worker/lane_overlap.py):
        #: the device's mark after its read graph, waited for instead of the whole stream
        self.read_mark = None


class RunAhead:
    """A session's replay run ahead (at most one) for its StretchReplay *replay*, and the
    count of replays answered from one (``hits``)."""

    def __init__(self, replay: Any) -> None:
        self.replay = replay
        self.ahead: _Ahead | None = None
        #: by held stretch: whether it may run ahead (StretchReplay.ahead_safe, asked once)
        self.safe: dict[int, bool] = {}
        self.hits = 0
        #: runs ahead dropped because the client's replay of their stretch differed
        self.missed = 0
        #: by held stretch: the parameters of its last replays, oldest first (guess_params;
        #: KEPT of them), its misses in a row, and the replays it has yet to sit out
        self._history: dict[int, deque] = {}
        self._misses: dict[int, int] = {}
        self._sitting: dict[int, int] = {}
        #: by held stretch: how many times it sat out since a run ahead of it was answered
        self._sat: dict[int, int] = {}
        #: the most device time a replay run ahead may take (GPUWB_RUN_AHEAD_US; 0: none)
        self.max_seconds = MAX_SECONDS
        #: whether a replay is run ahead beside other sessions, under a standing grant not
        #: told to stop (``share``: Pacer.may_run_ahead; GPUWB_RUN_AHEAD_BESIDE=0: only with
        #: no lease or alone on the device, as before)
        self.beside = True
        #: ... and one whose closing reads are made at once (GPUWB_READ_AHEAD_US; 0: none)
        self.read_now_seconds = READ_NOW_SECONDS
        #: ... or whose device time is at most 1/gap_share of its client's recent gaps
        #: (GAP_SHARE; GPUWB_READ_GAP_SHARE; 0: never by the gaps)
        self.gap_share = GAP_SHARE
        #: by held stretch: its client's last gaps (seconds), a run ahead's start to the
        #: replay it answered
        self._gaps: dict[int, deque] = {}
        #: runs ahead whose closing reads were made at once, and those whose reads failed
        #: or warned then (made again when the client asked)
        self.read_now = self.read_later = 0
        #: the parameters that are the values the replay before read (worker/fed_params.py)
        self.fed = FedParams()
        #: held stretches that draw random numbers whose run ahead missed and whose draws
        #: could not be handed on, or were refused by their calls (DrawJournal.hand_on): never
        #: run ahead again (each such miss makes their generators again from their journals)
        self.no_draws: set = set()
        #: by stretch: its runs ahead missed during its guess's warm-up (RunAhead._missed)
        self._warming: dict[int, int] = {}
        #: a loop of stretches taking turns (two reads a step: the step, then another value):
        #: by held stretch, the stretch whose replay came right after its last one
        #: (StretchGraphs.leader), and by stretch the runs ahead of its follower that missed
        #: in a row and the replays it has yet to sit out before its follower is run ahead
        #: again (MAX_MISSES, SIT_OUT)
        self.follows: dict[int, int] = {}
        self._follow_misses: dict[int, int] = {}
        self._follow_sitting: dict[int, int] = {}
        #: the last replay answered through graphs, from a run ahead or run now,
        #: ``(stretch, ops run, result slots)``, till the steady lane reads it after that
        #: batch (SteadyLane.served: stretches taking turns are read from such messages);
        #: numbers only, no array or graph (StretchReplay._replay sets it too)
        self.answered: tuple | None = None

    def forget(self) -> None:
        """The held stretches changed (some let go): what was learnt of each goes."""
        self.safe.clear()
        self._history.clear()
        self._misses.clear()
        self._warming.clear()
        self._sitting.clear()
        self._sat.clear()
        self._gaps.clear()
        self.follows.clear()
        self._follow_misses.clear()
        self._follow_sitting.clear()
        self.fed.forget()

    # ------------------------------------------------------------ running ahead
    def remember(self, sid: int, params: list) -> None:
        """A replay of stretch *sid* with *params* was answered elsewhere (the steady lane,
        a message committed ahead when it came): the history guess_params reads takes it."""
        history = self._history.get(sid)
        if history is not None:
            history.append(params)

    def recent(self, sid: int) -> deque | None:
        """The parameters of stretch *sid*'s last replays, oldest first (None: none yet)."""
        return self._history.get(sid)

    def restart_history(self, sid: int, earlier: list) -> None:
        """Stretch *sid*'s history is *earlier* (the replays before the one
        :meth:`start` is about to be told of: the steady lane handing its loop back)."""
        self._history[sid] = deque(earlier, maxlen=KEPT)

    def start(self, g: Any, entry: ReplayEntry, waiting: bool = False) -> bool:
        """After the reply to a replay of *g*'s stretch (*entry*, learnt from: StretchGraphs.
        learn_last), run the next one now if it may be; whether it ran. *waiting*: even with
        a message already waiting (the steady lane's plan whose reply is pushed: that message
        is most likely the one this run answers)."""
        began = perf_counter()   # (right after the reply: its client's gap counts from here)
        replay = self.replay
        x, graphs = replay.x, replay.graphs
        sid = entry.sid
        fed = self.fed
        reads = fed.reads_of(entry)
        fed.learn(entry, reads)
        history = self._history.get(sid)
        if history is None:
            history = self._history[sid] = deque(maxlen=KEPT)
        # (the replays before this one, where its parameters changed: else the guess is them)
        guessed_from = list(history) if history and history[-1] != entry.params else None
        history.append(entry.params)
        leader = graphs.leader if graphs is not None else None
        if leader is not None:
            self.follows[leader] = sid
        sitting = self._sitting.get(sid)   # (a replay of its own served: one less to sit out,
        if sitting:                        # whichever stretch is run ahead after it)
            self._sitting[sid] = sitting - 1
        follower = self.follows.get(sid, sid)
        if follower != sid:
            follow_sitting = self._follow_sitting.get(sid)
            if follow_sitting:
                self._follow_sitting[sid] = follow_sitting - 1
            else:   # (a loop of stretches taking turns: the next one's replay, not this one's)
                return self._start_follower(entry, follower, began, waiting, reads)
        if sitting:
            return False
        stretch = self._runnable(sid, g, entry.outs, waiting)
        if stretch is None:
            return False
        handles = g.copies.predict_handles()
        if handles is None:
            return False
        inputs = list(entry.inputs)
        for n, hid in handles.items():
            inputs[n] = hid
        if not self.may_draw(sid, stretch, inputs):
            return False
        params = fed.guess(sid, guess_params(guessed_from, entry.params, stretch.param_types),
                           sid, reads)
        return self._run(sid, g, graphs.states[sid], stretch, inputs, params, len(entry.outs),
                         entry.early, began)

    def may_draw(self, sid: int, stretch: HeldStretch, inputs: list) -> bool:
        """Whether stretch *sid*'s replay, given the handles *inputs*, may be run ahead as far
        as its draws go: it draws nothing, or only from generators whose journals can undo
        them (DrawJournal.undoable), and its draws were never found not to be handed on
        (``no_draws``), and not while its parameters change within its guess's warm-up
        (MISSES_FROM replays). A run the client's replay does not match is undone
        (:meth:`answer`).
        RunAhead's own runs, a follower's, and the steady lane's ask this."""
        if not stretch.draws:
            return True
        if sid in self.no_draws:
            return False
        history = self._history.get(sid)
        if history is not None and len(history) <= MISSES_FROM \
                and any(a != b for a, b in pairwise(history)):
            # (its parameters change and its guess is in its warm-up: a run ahead now would
            # likely miss, and a draw that took the missed scalar would then put it among
            # no_draws for good — Langevin's annealed scale, guessed at once after it)
            return False
        x = self.replay.x
        return x.draws.undoable(_generators(stretch, inputs, x.table.objects))

    def _start_follower(self, entry: ReplayEntry, sid: int, began: float, waiting: bool,
                        reads: dict) -> bool:
        """After the reply to *entry*'s replay, where stretch *sid*'s replay came right after
        that stretch's last time (``follows``): run *sid*'s next replay now if it may be, its
        inputs where they came from then (GraphCopies.predict_after: the same arrays as its
        last replay's, or *entry*'s results or inputs), its parameters guessed from its own
        last replays' (guess_params), or the values *entry*'s replay read (*reads*) where
        they were its parameters (FedParams); whether it ran."""
        graphs = self.replay.graphs
        state = graphs.states.get(sid) if graphs is not None else None
        g = state.graph if state is not None else None
        history = self._history.get(sid)
        if g is None or not history or self._sitting.get(sid):
            return False
        # (its parameters guessed from its own last replays', as its own next replay's are:
        # a step whose learning rate decays, followed by a read of its accuracy)
        past = list(history)
        held = self.replay.stretches.held.get(sid)
        params = self.fed.guess(sid, guess_params(past[:-1], past[-1],
                                                  held.param_types if held is not None else None),
                                entry.sid, reads)
        last = g.copies.last_entry
        handles = g.copies.predict_after(entry.sid, (entry.inputs, entry.outs))
        if last is None or handles is None:
            return False
        stretch = self._runnable(sid, g, last[1], waiting)
        if stretch is None:
            return False
        inputs = list(last[0])
        for n, hid in handles.items():
            inputs[n] = hid
        if not self.may_draw(sid, stretch, inputs):   # (as a stretch's own next replay)
            return False
        if not self._run(sid, g, state, stretch, inputs, params, len(last[1]), entry.early,
                         began):
            return False
        self.ahead.after = entry.sid
        return True

    def _runnable(self, sid: int, g: Any, outs: list, waiting: bool) -> HeldStretch | None:
        """Held stretch *sid*, where its next replay through *g* may run ahead now: it may
        (StretchReplay.ahead_safe), *g* is its graph, short enough, and no replay its pacer
        would pace beside others; its last replay's results, *outs*, hold few enough bytes;
        and no message waits (unless *waiting*). Else None."""
        replay = self.replay
        x, graphs = replay.x, replay.graphs
        pacer = x.pacer
        if graphs is None or x.poisoned_at is not None or not pacer.may_run_ahead(self.beside):
            return None
        safe = self.safe.get(sid)
        if safe is None:
            safe = self.safe[sid] = replay.ahead_safe(sid)
        if not safe:
            return None
        stretch = replay.stretches.held.get(sid)
        state = graphs.states.get(sid)
        if stretch is None or state is None or state.graph is not g \
                or g.cost[0] is None or g.cost[0] > self.max_seconds:
            return None
        # (beside others, never one its replay would be paced for: StretchReplay.run)
        bound = replay.pacing_bound(pacer) if pacer.in_company() else None
        if bound is not None and g.cost[0] >= bound:
            return None
        arrays = x.table.arrays
        if sum(arrays[hid].nbytes for hid in outs if hid in arrays) > max_bytes(x.memory_limit):
            return None
        if not waiting and x.more_work():   # (last: a look at the sockets, where the checks
            return None                     # above are dicts')
        return stretch

    def _run(self, sid: int, g: Any, state: Any, stretch: HeldStretch, inputs: list,
             params: list, n_outs: int, early: bool, began: float) -> bool:
        """Run stretch *sid*'s replay through *g* with these *inputs* and *params* now, its
        *n_outs* results under provisional ids (:meth:`start`); whether it ran. *early*: the
        replay just answered came early (the reads of the one run now are then not made at
        once: the client's next message comes while it still issues ops)."""
        replay = self.replay
        x, graphs = replay.x, replay.graphs
        pacer = x.pacer
        outs = [PROVISIONAL + n for n in range(n_outs)]
        guess = ReplayEntry(sid, 0, inputs, params, outs, None, True)
        results = BatchResults(x.table)
        # charged what it measured before, it needs no segment, so no batch of the pacer's
        # (the answer's batch reports); else measured, its time learnt when answered
        estimate = pacer.replay_estimate(g.cost, at_batch_end=False)
        measured_from = None
        if estimate is None:
            if not pacer.begin_ahead(self.beside):   # (told to stop meanwhile: none)
                return False
            measured_from = pacer.busy
            if pacer.fresh_due:
                pacer.start_segment()
            pacer.began = perf_counter()   # (its host time from here: Pacer._mark)
        kept = (x.poisoned_at, x.poisoned_by, x.op_errors, x.phases)
        warned = len(x._warnings)
        x.phases = NO_PHASES   # (the worker's phases are the messages')
        done = None
        aside = speculating(x, True)
        try:   # (its closing reads wait for the device: made when the client asks)
            done = graphs.run(state, stretch, guess, results, run_ahead=True)
        except Exception:   # (out of memory, say: the client's replay runs as ever)
            done = None
        finally:
            speculated(x, aside)
            x.phases = kept[3]
        reads, writes, undo = graphs.take_reads(), graphs.take_writes(), graphs.take_undo()
        # (a warning would go with the next reply numbered as no op of it: not run ahead)
        ok = done is not None and done[1] is None and not results.downloads \
            and len(x._warnings) == warned
        del x._warnings[warned:]
        if estimate is None:
            pacer.end_batch(stretch.ops if done is not None else 0, x.more_work)
        elif ok:
            pacer.charge(estimate)
        if not ok:
            graphs.undo(undo)
            x.poisoned_at, x.poisoned_by, x.op_errors = kept[0], kept[1], kept[2]
            self._free(len(outs))
            x.draws.undo()
            return False
        if state.graph is not None:   # (another graph of the stretch's, where its ints take
            g = state.graph             # turns; none: dropped meanwhile, not matched)
        ahead = self.ahead = _Ahead(sid, inputs, params, g, results, done[0], len(outs), reads,
                                    writes, measured_from, began, pacer.alone_now())
        ahead.undo = undo
        if reads is not None and not early and g.cost[0] is not None \
                and self._reads_now(sid, g.cost[0]):
            waited = perf_counter()
            values = graphs.read_now(reads)   # (None: one failed or warned; made when asked)
            ahead.read_wait = perf_counter() - waited
            if values is not None:
                ahead.reads, ahead.read_values = None, values
                self.read_now += 1
            else:
                self.read_later += 1
        return True

    # ------------------------------------------------------------ answering
    def answer(self, stretch: HeldStretch, entry: ReplayEntry, results: BatchResults,
               matched: bool = False) -> tuple | None:
        """The client's replay *entry* has come: if it is the one run ahead, its answer,
        ``(ops run, None, False)``, its results under the client's handles and its values
        in *results*; else None (what was run ahead is dropped, the replay runs as ever).
        *matched*: :meth:`matches` said so already."""
        ahead = self.ahead
        if ahead is None:
            return None
        if not matched and not self.matches(entry):
            self.ahead = None
            self.replay.graphs.undo(ahead.undo)
            draws = self.replay.x.draws
            if ahead.after is not None:   # (a follower's run: its link missed)
                self._follow_missed(ahead.after)
            if entry.sid == ahead.sid:
                self._missed(entry.sid)
                # (its draws take no parameter: the replay's same calls get their arrays;
                # where one cannot, its generators are made again: not twice. Not even in
                # its guess's warm-up: a Langevin loop whose annealed scale missed its first
                # guesses, drawing ahead again, had its generators made again 18 times and
                # its stretch let go, on the development VM)
                if not draws.hand_on({id(a) for a in ahead.graph.env.values()},
                                     (self.no_draws, entry.sid)):
                    self.no_draws.add(entry.sid)
            else:
                draws.undo()
            self._free(ahead.slots)
            return None
        self.ahead = None
        self.replay.x.draws.commit()
        self._misses[entry.sid] = 0
        self._sat.pop(entry.sid, None)
        if ahead.after is not None:
            self._follow_misses[ahead.after] = 0
        gaps = self._gaps.get(entry.sid)
        if gaps is None:
            gaps = self._gaps[entry.sid] = deque(maxlen=GAPS_KEPT)
        # (from right after the reply to the client's replay, less the worker's own wait for
        # the reads made at once: never longer than the client's own gap, so reads made at
        # once do not keep themselves on)
        gaps.append(self.replay.x.began_at - ahead.started - ahead.read_wait)
        graphs = self.replay.graphs
        graphs.write_back(ahead.writes)   # (the inputs it wrote: the client's now)
        table = self.replay.x.table
        need = entry.need
        for n, hid in enumerate(entry.outs):
            array = table.rename(PROVISIONAL + n, hid)
            if array is not None and (need is None or n in need):
                results.fresh_array(hid, array)
        first = entry.first
        for seq, value in ahead.results.values:
            results.value(first + seq, value)
        if ahead.read_values is not None:   # (its closing reads, made when it ran)
            for seq, value in ahead.read_values:
                results.value(first + seq, value)
        if not entry.early:   # (a replay sent at its run's end: the inputs it drops go now)
            for n in ahead.graph.shape.input_frees:
                table.free(entry.inputs[n])
        failed = graphs.run_reads(ahead.reads, first, results)   # (the device is done by now)
        pacer = self.replay.x.pacer
        if ahead.measured_from is not None and pacer.harvested():   # (its segment harvested)
            pacer.learn(ahead.graph.cost, pacer.busy - ahead.measured_from,
                        ahead.alone and pacer.alone_now())
        if failed is not None:
            return failed
        graphs.replayed(ahead.graph, entry)
        self.hits += 1
        self.answered = (ahead.sid, ahead.ran, ahead.slots)
        state = graphs.states.get(entry.sid)   # (its ints watched: GraphState.ints_turn)
        if state is not None:
            state.answered_ahead(entry.params)
        return ahead.ran, None, False

    def afresh(self, sid: int) -> None:
        """A run ahead of stretch *sid* answered by the steady lane (worker/steady_lane.py)
        for the client's message: its misses in a row and its sit-outs' doubling begun
        again, as :meth:`answer`'s are. Not for a message committed ahead of its coming
        until it comes (worker/server_replies.py ``_claim_pushed``): a roll-back takes that
        answer back (``SteadyLane.unanswer``). (Not begun again, a loop the lane served
        between its float guess's warm-up misses — a lane left at a miss, the generic guess
        after it missing too — sat out SIT_OUT replays after three such misses, twice as
        many at each run of the same cell: 128 messages of the random walk's 200 at its
        fourth run, all by the generic path, on the development VM.)"""
        if self._misses.get(sid):
            self._misses[sid] = 0
        if sid in self._sat:
            del self._sat[sid]

    def _reads_now(self, sid: int, cost: float) -> bool:
        """Whether a run ahead of stretch *sid*, its last measured device time *cost*, makes
        its closing reads at once: where that time is short (READ_NOW_SECONDS), or short
        beside its client's recent gaps (GAP_SHARE): the worker waits for the device while
        its client is away."""
        if cost <= self.read_now_seconds:
            return True
        gaps = self._gaps.get(sid)
        return bool(self.gap_share) and gaps is not None and len(gaps) == GAPS_KEPT \
            and cost * self.gap_share <= min(gaps)

    def matches(self, entry: ReplayEntry) -> bool:
        """Whether the client's replay *entry* is the one run ahead (its stretch, the inputs
        its ops read, its parameters, and the graphs it ran): :meth:`answer` would answer
        it. Changes nothing. An input only dropped (an array from before that the stretch
        frees, never reads: last step's temporary, rebound) may differ: the run read nothing
        of it, and the answer drops the client's own (*entry*'s)."""
        ahead = self.ahead
        if ahead is None or entry.sid != ahead.sid:
            return False
        got, ran = entry.inputs, ahead.inputs
        if got != ran and (len(got) != len(ran)
                           or any(got[n] != ran[n] for n in ahead.graph.shape.used)):
            return False
        return same_params(entry.params, ahead.params) \
            and self.replay.graphs.states[entry.sid].graph is ahead.graph

    def _missed(self, sid: int) -> None:
        """A run ahead of *sid* that its client's replay did not match: MAX_MISSES in a row,
        once MISSES_FROM replays are behind its guesses, and it sits out SIT_OUT replays,
        twice as many each time since its last answered run ahead (MAX_SIT_OUT at most).
        A miss before that is its model's warm-up, not counted (MISSES_FROM such misses at
        most, whatever clears its history meanwhile)."""
        self.missed += 1
        history = self._history.get(sid)
        if history is None or len(history) <= MISSES_FROM:
            warming = self._warming.get(sid, 0) + 1
            self._warming[sid] = warming
            if warming <= MISSES_FROM:
                return   # (its guess had too few values behind it yet: not counted)
        misses = self._misses.get(sid, 0) + 1
        if misses >= MAX_MISSES:
            sat = self._sat.get(sid, 0)
            self._sitting[sid] = min(SIT_OUT << sat, MAX_SIT_OUT)
            self._sat[sid] = sat + 1
            misses = 0
        self._misses[sid] = misses

    def _follow_missed(self, sid: int) -> None:
        """A run ahead of the stretch that follows *sid*'s that its client's replay did not
        match: MAX_MISSES in a row and *sid*'s follower sits out SIT_OUT of its replays (its
        own next replay is run ahead meanwhile, as any stretch's)."""
        misses = self._follow_misses.get(sid, 0) + 1
        if misses >= MAX_MISSES:
            self._follow_sitting[sid] = SIT_OUT
            misses = 0
        self._follow_misses[sid] = misses

    def drop(self) -> None:
        """Forget the replay run ahead (any message but its replay, an eviction, a swap, the
        session parked or lent for a move: worker/handover.py)."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            self.replay.graphs.undo(ahead.undo)
            self._free(ahead.slots)
            self.replay.x.draws.undo()

    def _free(self, slots: int) -> None:
        """Free the provisional results of a run not answered (up to *slots* of them)."""
        table = self.replay.x.table
        arrays = table.arrays
        for n in range(slots):
            if PROVISIONAL + n in arrays:
                table.free(PROVISIONAL + n)


def speculating(x: Any, draws: bool) -> tuple:
    """Before a run ahead's ops on executor *x* (RunAhead's, the steady lane's): out of
    memory, it asks nobody to make room (swapping other sessions out for work the client
    may never ask for: it is dropped, and the replay runs as ever); with *draws*, its draws
    are kept aside (draw_journal.py). What :func:`speculated` puts back after them."""
    aside = (x.make_room, getattr(x.device, "make_room", None), x.seq)
    x.make_room = None
    if aside[1] is not None:
        x.device.make_room = None
    x.draws.speculating = draws
    return aside


def speculated(x: Any, aside: tuple) -> None:
    """After a run ahead's ops: what :func:`speculating` set aside, back (the op number the
    ops moved too)."""
    x.make_room, x.seq = aside[0], aside[2]
    if aside[1] is not None:
        x.device.make_room = aside[1]
    x.draws.speculating = False


def _generators(stretch: HeldStretch, inputs: list, objects: dict) -> list:
    """The remote objects whose methods *stretch* calls (its draws' generators), by the
    handles *inputs* its run would take (None where one is not the session's)."""
    found = []
    for op in stretch.items:
        if type(op) is not Slot and op.kind == m.KIND_OBJECT:
            target = op.target   # (an object's own id; an input's slot, were it a handle)
            hid = inputs[target.n] if type(target) is Slot and target.kind == "i" else target
            found.append(objects.get(hid) if type(hid) is int else None)
    return found
