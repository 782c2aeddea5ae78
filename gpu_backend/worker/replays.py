"""The executor's side of stretch replay (docs/graph-replay.md): keeping an offered batch,
running a replay entry, and a skipped replay's frees. A part the executor holds
(``executor.replay``), so that executor.py stays the op loop; it runs ops only through
the executor's public interface (``run_records``, ``call``, ``record_error``, ``poison``).
"""

from __future__ import annotations

from time import perf_counter
from typing import Any, Iterator

from ..protocol.errors import ProtocolError, error_name
from .batch_results import BatchResults
from .graph_replay import GRAPHLESS, GraphReplayer
from .stretches import Slot, StretchBook, Template

__all__ = ["StretchReplay"]


class StretchReplay:
    """A session's stretch replay: its held stretches (*stretches*), the graphs that run
    them where the device has graph tools, and the counts of replays run."""

    def __init__(self, executor: Any, stretches: StretchBook) -> None:
        self.x = executor
        self.stretches = stretches
        #: the held stretches' graphs (worker/graph_replay.py); None where the device has
        #: no graph tools, or the pool asked for re-runs only (:meth:`rerun_only`)
        self.graphs: GraphReplayer | None = (GraphReplayer(executor)
                                             if executor.device.graph_tools else None)
        self.replays = 0      # replay entries run
        self.graphed = 0      # of which served by graphs
        self.fallbacks = 0    # of which a graph could not serve (re-run instead)
        self.evictions = 0    # times every graph was dropped for an op out of memory

    def rerun_only(self) -> None:
        """``GPUWB_GRAPHS=rerun``: every replay runs from its records, never through graphs."""
        self.graphs = None

    def keep(self, sid: Any, body: bytes, executed: int) -> int | None:
        """The batch *body* just ran whole, offered as stretch *sid*: keep it; its id if kept."""
        if not self.stretches.offer(sid, body, executed):
            return None
        template = self.stretches.held[sid]
        template.outputs_owned = _outputs_owned(template, self.x.table.arrays)
        return sid

    def drop(self, sids: Any) -> None:
        """The client lets these stretches go (header ``D``): they and their graphs go."""
        self.stretches.drop(sids)

    def run(self, entry: Any, payload: Iterator, results: BatchResults) -> tuple:
        """Run a held stretch again (header ``T``): through its graphs where they serve, else
        as the records the client would have sent. Returns (ops run, error entry,
        cancelled, whether its graphs served it)."""
        x = self.x
        try:
            template, (sid, first, inputs, params, outs) = self._held(entry)
        except Exception as exc:
            return 0, x.record_error(None, exc), False, False
        self.replays += 1
        pacer = x.pacer
        if pacer.fresh_due:
            pacer.start_segment()
        pacer.began = perf_counter()
        if self.graphs is not None:
            had_graph = template.graph is not None and template.graph is not GRAPHLESS
            mark = results.values_mark()   # (a replay re-run after its graphs failed reads
            try:                           # its values again)
                done = self.graphs.run(template, first, inputs, params, outs, results)
            except Exception as exc:
                if not (self.drop_graphs_for(exc) and not template.draws):
                    template.graph = GRAPHLESS   # graph replay's own fault, not an op's: never again
                    x.poison(first)
                    return 0, x.record_error(first, exc), False, False
                done = None   # out of memory beside graphs, now dropped: re-run (nothing the
                # client sees was written, and no generator advanced)
            if done is not None:
                self.graphed += 1
                return (*done, True)
            results.forget_values_since(mark)
            if had_graph:
                self.fallbacks += 1
        rebuilt = template.rebuild(first, inputs, params, outs)
        return (*x.run_records(rebuilt, payload, results), False)

    def skip(self, entry: Any) -> None:
        """A skipped replay still drops the inputs its stretch drops, as a skipped batch does."""
        try:
            template, (_sid, _first, inputs, _params, _outs) = self._held(entry)
        except Exception:
            return
        for item in template.items:
            if type(item) is Slot and item.kind == "i":
                self.x.table.free(inputs[item.n])

    def drop_graphs_for(self, exc: BaseException) -> bool:
        """An op ran out of memory while held stretches' graphs keep memory of their own:
        drop every graph (their stretches stay: re-run, and captured again at a later
        replay, within MAX_ATTEMPTS) and the memory pool's cached blocks, so that the op may
        be tried once more. Whether anything was dropped (if not, the error stands): a
        user's program never runs out of memory because of graphs it did not ask for."""
        if error_name(exc) != "OutOfMemoryError":
            return False
        freed = 0
        for template in self.stretches.held.values():
            graph = template.graph
            if graph is not None and graph is not GRAPHLESS and graph.nbytes():
                freed += graph.nbytes()
                template.graph = None
        if not freed:
            return False
        self.evictions += 1
        self.x.device.release_cache()
        return True

    def figures(self) -> dict:
        """Stretches held, replays run (through graphs, and re-run where a graph's guards
        failed), offers refused, the memory the graphs hold, and graph evictions."""
        graph_bytes = 0
        for template in self.stretches.held.values():
            nbytes = getattr(template.graph, "nbytes", None)
            graph_bytes += nbytes() if nbytes is not None else 0
        return {"held": len(self.stretches.held), "replays": self.replays, "graphed": self.graphed,
                "fallbacks": self.fallbacks, "refused": self.stretches.refused,
                "graph_bytes": graph_bytes, "evictions": self.evictions}

    def _held(self, entry: Any) -> tuple[Template, list]:
        """The template a replay entry names, and the entry, checked against it."""
        if type(entry) is not list or len(entry) != 5 or type(entry[1]) is not int:
            raise ProtocolError("malformed stretch replay")
        template = self.stretches.get(entry[0])
        template.check(*entry[2:])
        return template, entry


def _outputs_owned(template: Template, arrays: dict) -> bool:
    """Whether the results the client keeps of a stretch's run own their memory, apart from
    each other and from its inputs: graph replay hands out copies, which would break a view
    (``x[1:]``, ``x.T``) or an alias (``cupy.asarray(x)`` is ``x``)."""
    kept = [arrays[h] for h in template.recorded_outs if h in arrays]
    inputs = [arrays[h] for h in template.recorded_inputs if h in arrays]
    if len({id(a) for a in kept + inputs}) != len(kept) + len(inputs):
        return False
    return all(a.base is None and (a.flags.c_contiguous or a.flags.f_contiguous) for a in kept)
