"""The executor's side of stretch replay (docs/graph-replay.md): keeping an offered batch,
running a replay entry, and a skipped replay's frees. Functions of the executor, as
``run_object_call`` and ``run_cuda_call`` are, so that executor.py stays the op loop.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any, Iterator

import msgpack

from ..protocol import codec
from ..protocol.errors import ProtocolError, error_name
from .graph_replay import GRAPHLESS
from .stretches import Slot, Template

__all__ = ["keep_stretch", "run_replay", "free_replay", "evict_graphs"]


def keep_stretch(executor: Any, sid: Any, executed: int) -> int | None:
    """The batch just run whole was offered as stretch *sid*: keep it; its id if kept."""
    book = executor.stretches
    if not book.offer(sid, executor._batch, executed):
        return None
    template = book.held[sid]
    template.outputs_owned = _outputs_owned(template, executor.table.arrays)
    return sid


def run_replay(executor: Any, entry: Any, payload: Iterator, metas, fresh, values, downloads,
               out_frames) -> tuple:
    """Run a held stretch again (header ``T``): through its graphs where they serve, else
    as the records the client would have sent. Returns ``_run_ops``'s (ops run, error
    entry, cancelled)."""
    try:
        template, (sid, first, inputs, params, outs) = _held(executor, entry)
    except Exception as exc:
        return 0, executor._error(None, exc), False
    book = executor.stretches
    book.replays += 1
    pacer = executor.pacer
    if pacer.fresh_due:
        pacer.start_segment()
    pacer.began = perf_counter()
    if executor.graphs is not None and book.graphs:
        had_graph = template.graph is not None and template.graph is not GRAPHLESS
        read = len(values)   # (a replay re-run after its graphs failed reads its values again)
        try:
            done = executor.graphs.run(template, first, inputs, params, outs, metas, fresh, values)
        except Exception as exc:
            if not (evict_graphs(executor, exc) and not template.draws):
                template.graph = GRAPHLESS   # graph replay's own fault, not an op's: never again
                executor.poisoned_at = first
                return 0, executor._error(first, exc), False
            done = None   # out of memory beside graphs, now dropped: re-run (nothing the
            # client sees was written, and no generator advanced)
        if done is not None:
            book.graphed += 1
            return done
        del values[read:]
        if had_graph:
            book.fallbacks += 1
    rebuilt = template.rebuild(first, inputs, params, outs)
    executor._batch = rebuilt
    unpacker = msgpack.Unpacker(ext_hook=executor._hook,
                                max_buffer_size=max(len(rebuilt), 1 << 16), **codec.UNPACK_OPTIONS)
    unpacker.feed(rebuilt)
    return executor._run_ops(unpacker, payload, metas, fresh, values, downloads, out_frames)


def free_replay(executor: Any, entry: Any) -> None:
    """A skipped replay still drops the inputs its stretch drops, as a skipped batch does."""
    try:
        template, (_sid, _first, inputs, _params, _outs) = _held(executor, entry)
    except Exception:
        return
    for item in template.items:
        if type(item) is Slot and item.kind == "i":
            executor.table.free(inputs[item.n])


def _held(executor: Any, entry: Any) -> tuple[Template, list]:
    """The template a replay entry names, and the entry, checked against it."""
    if type(entry) is not list or len(entry) != 5 or type(entry[1]) is not int:
        raise ProtocolError("malformed stretch replay")
    template = executor.stretches.get(entry[0])
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


def evict_graphs(executor: Any, exc: BaseException) -> bool:
    """An op ran out of memory while held stretches' graphs keep memory of their own:
    drop every graph (their templates stay: re-run, and captured again at a later replay,
    within MAX_ATTEMPTS) and the memory pool's cached blocks, so that the op may be tried
    once more. Whether anything was dropped (if not, the error stands): a user's program
    never runs out of memory because of graphs it did not ask for."""
    if error_name(exc) != "OutOfMemoryError":
        return False
    freed = 0
    for template in executor.stretches.held.values():
        graph = template.graph
        if graph is not None and graph is not GRAPHLESS and graph.nbytes():
            freed += graph.nbytes()
            template.graph = None
    if not freed:
        return False
    executor.stretches.evictions += 1
    executor.device.release_cache()
    return True
