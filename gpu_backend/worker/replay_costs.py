"""What a held stretch's replay is charged, and what the pacer learns of it: its cost
measured, charged without markers where nobody is paced against the session, learnt from
its spans beside others, or priced (worker/replay_prices.py).

A mixin of :class:`worker.pacing.Pacer`, apart so that the pacer's own module keeps to
segments, leads and the lease: it reads the pacer's ``fresh_due``, ``_pending``, ``busy``,
``own``, ``lease``, ``trace``, ``priced``, ``_price`` and ``_measuring``, and calls its
``harvest``, ``side_by_side`` and ``alone_now``. A replay's *cost* is its graphs'
``[seconds, replays since]`` (worker/graph_state.py; a capture starts a new one).
"""

from __future__ import annotations

from .replay_prices import ReplayPrice

__all__ = ["ReplayCosts", "MEASURE_EVERY"]

#: A held stretch's replay whose device time was measured is charged that time, without
#: markers, this many times before it is measured again (replay_estimate).
MEASURE_EVERY = 16


class ReplayCosts:
    """The pacer's methods for held replays' costs (see the module's docstring)."""

    def replay_estimate(self, cost: list, at_batch_end: bool = True) -> float | None:
        """Before a replay of a held stretch's graphs, whose *cost* (``[seconds, replays
        since]``, kept with the graphs: a capture starts a new one) says what its last
        measured replay was charged: the device seconds to charge this one without
        markers, or None: it is measured, a segment as any batch's. A replay whose last
        measured one ended its batch with the device done (a loop's sync) is charged that
        time MEASURE_EVERY times, then measured again; only where nobody is paced against
        this session (no lease, or alone on the device), with nothing launched and
        unmeasured, and no trace kept. A segment's two CUDA events, their queries and the
        harvest cost 15-25 µs of an H200 host's worker a replay, a tenth of a 20-op loop's
        iteration, and a replay's graphs take the same device time each time. A measured
        replay is learnt at its batch's end; not *at_batch_end* (a replay run ahead, whose
        device work is done later: worker/run_ahead.py), by its caller, from ``busy``
        once the pacer is ``settled``. Beside others every replay is measured, and what it
        measured is learnt all the same (a run ahead beside others is gated by it:
        Pacer.may_run_ahead). With a trace kept, every replay is a traced segment, learnt
        all the same, so replays still run ahead (each begun as a batch: begin_ahead). Left
        unlearnt, none ever did under a trace: H200 run 101's interactive user had none of
        ~550 requests answered from a run ahead, against ~500 of ~520 untraced (run 99).
        Priced (worker/replay_prices.py: beside others under a standing grant, its cost
        known, at its batch's end), it is measured and charged its cost once its own
        segments are harvested, whatever was launched before it."""
        if not self.fresh_due:
            return None
        if at_batch_end:
            self._end_price()
            # (priced by its own segments, whatever is still pending before it: a client's
            # next replay, sent early, finds the last batch's end marker not yet reached on
            # a GPU, and beside others priced only where none was, 5-14 % of the syncing
            # users' device time was priced, H200 run 321)
            if self.priced and cost[0] is not None and self.side_by_side() and not self.alone_now():
                self._price = ReplayPrice(cost)   # (learnt from its spans when settled)
                return None
        if self._pending:
            return None
        if self.trace is None and cost[0] is not None and cost[1] < MEASURE_EVERY and self.alone_now():
            cost[1] += 1
            return cost[0]
        if at_batch_end:
            self._measuring = (cost, self.busy, self.alone_now())
        return None

    def _end_price(self) -> None:
        """A priced replay whose batch ended without its end (the executor skips
        ``end_batch`` for a batch that ran nothing): dropped if nothing of it was marked (it
        ran nothing), else settled as it is."""
        price = self._price
        if price is not None:
            if price.segments or price.span:
                self._close_price()
            else:
                self._price = None

    def _close_price(self) -> None:
        """At the end of a priced replay's batch (its last segment marked): settled now if
        every segment of it is harvested, else by the harvest that takes its last."""
        price, self._price = self._price, None
        price.closed = True
        if price.due:
            self._settle_price(price)

    def _priced_segment(self, price: ReplayPrice, span: float) -> None:
        """A segment of a priced replay harvested, *span* its measure: counted, and the
        replay settled if it was its last."""
        price.segments -= 1
        price.span += span
        if price.due:
            self._settle_price(price)

    def _settle_price(self, price: ReplayPrice) -> None:
        """A priced replay's segments all harvested: charged its own cost (``busy`` and
        ``own``, which the lease tells the arbiter), and what its spans measured learnt as a
        measure beside others (the least so far)."""
        self.busy += price.price
        self.own += price.price
        if self.lease is not None:
            self.lease.own = self.own
        if price.span > 0:
            self.learn(price.cost, price.span, alone=False)

    def learn(self, cost: list, seconds: float, alone: bool | None = None) -> None:
        """A replay's measured device time *seconds* taken into its *cost* (``[seconds,
        replays since]``): measured where nobody was paced against this session (*alone*;
        None: :meth:`alone_now`), as measured, and charged so MEASURE_EVERY times; beside
        others, the shortest so far (its spans there hold others' time slices too, so its
        own time is at most any of them: a longer one would stop its run ahead,
        MAX_SECONDS), and never charged as measured (the session alone measures again
        first). Nothing measured (*seconds* not positive) teaches nothing."""
        if seconds <= 0:
            return
        if self.alone_now() if alone is None else alone:
            cost[0], cost[1] = seconds, 0
        else:
            cost[0] = seconds if cost[0] is None else min(cost[0], seconds)
            cost[1] = MEASURE_EVERY

    @property
    def settled(self) -> bool:
        """Whether every segment launched is measured and charged (nothing pending)."""
        return not self._pending

    def harvested(self) -> bool:
        """Whether every segment launched is measured and charged, those the device has
        finished harvested first (never blocks). Asked as a run ahead the pacer measured is
        answered, its reads made, so its segment done: left to the serving loop's harvest
        when idle, a worker that never idled (a drawing loop's on a GPU, its client's next
        message always waiting) never learnt what it measured, its replay's cost stayed due
        for measuring, and the steady lane declined every run ahead after (H200 run 205:
        ``monte_carlo_pi_rng`` 441 of 546)."""
        if self._pending:
            self.harvest()
        return not self._pending

    def charge(self, seconds: float) -> None:
        """Charge *seconds* of device time measured before (replay_estimate)."""
        self.busy += seconds

    def _measured(self) -> None:
        """At a batch's end, its segments harvested: the replay being measured is known if
        its work is done and charged (nothing left pending); else it is measured again."""
        cost, before, alone = self._measuring
        self._measuring = None
        if not self._pending and self.fresh_due and self.busy > before:
            self.learn(cost, self.busy - before, alone and self.alone_now())
