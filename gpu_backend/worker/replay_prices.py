"""A held stretch's replay beside others, charged what it costs on its own.

Why (issue 51): under ``share`` sessions launch side by side and CUDA time-slices their
contexts, so a batch's CUDA events measure its own work and the other contexts' slices in
between. The arbiter scales each report by the mean of ``1/k`` over the time since the
last (arbiter/share.py, "overlap-aware charging"), which is right on average and wrong
batch by batch: where a batch's kernels fell against the others' slices moves its span by
tens of per cent. Run in the tests' simulator with the real policy
(benchmarks/share_error_sim.py), charges exact to the batch kept users 1:2:4 within
0.2-0.45 % of their weights in every second, at any window from 1 to 16 ms, and charges
off by a factor of σ 0.2-0.3 a batch reproduced the GPU's 2.4-3.1 % mean and 8-14 % p99
one-second errors (H200 run 320). So the noise is the charges', not the window's.

A replay of a held stretch runs the same kernels each time (docs/stretch-replay.md), so
what it costs alone is known once measured: the least span measured of it
(``Pacer.learn``; measured alone, that one). Charged that beside others, its user's
charges are its replays counted at their own cost, which is what the users' side counts
(a user's rate is its replays a second over its replays a second alone): the arbiter's
split is then the users' split. The spans are still measured and still teach the pacer's
per-op estimate and the replay's least cost; only the charge changes.

The charge is told to the arbiter apart (``own``, cumulative, with every report of
``busy``, which includes it): it is not scaled by ``1/k`` there (arbiter/share.py,
``SharePolicy._charge``). Off unless the worker's settings say so
(``GPUWB_SHARE_PRICED``, worker/settings.py): measured on an H200 (runs 321-324,
docs/fair-share.md, "Replays charged their own cost") it lost. A least span is a cost
alone only for a user that is sometimes alone, and a light user beside heavier ones never
is: the weight-1 user of sync-1:2:4 was charged 5.91 ms a GEMM against the weight-4 user's
2.81 (its GEMM alone: about 2.96), and the one-second error rose from 1.7 to 6.8 %. A
replay run ahead of its message
(worker/run_ahead.py, worker/steady_lane.py: at most ``run_ahead.MAX_SECONDS`` of device
time) is not priced, nor is any eager batch: they are charged their spans, scaled, as
before.
"""

from __future__ import annotations

__all__ = ["ReplayPrice"]


class ReplayPrice:
    """One replay being charged its own cost: *cost* is its graphs' ``[seconds, replays
    since]`` (worker/graph_state.py), whose least measured span it is charged. Its
    segments (the pacer's) are counted as they are marked and harvested; once its batch
    has ended (:attr:`closed`) and the last is harvested, the pacer settles it
    (worker/replay_costs.py, ``ReplayCosts._settle_price``)."""

    __slots__ = ("cost", "price", "span", "segments", "closed")

    def __init__(self, cost: list) -> None:
        self.cost = cost
        #: the device seconds it is charged: its least span measured before it
        self.price = float(cost[0])
        #: the device seconds its segments measured (its own and others' slices)
        self.span = 0.0
        #: its segments marked and not yet harvested
        self.segments = 0
        #: its batch has ended: no segment of it is marked any more
        self.closed = False

    @property
    def due(self) -> bool:
        """Whether it can be settled: its batch ended and every segment of it harvested."""
        return self.closed and not self.segments
