"""A session's own CUDA graphs (CuPy's graph API): its ``graph.*`` CUDA calls.

The client's ``Stream.begin_capture`` is ``graph.begin`` (the capture mode and whether the
client's current stream is the capturing one), ``Stream.end_capture`` is ``graph.end``
(the new graph's handle, chosen by the client; none: the capture is aborted, the client
raising CUDA's error itself), ``graph.route`` says whether the ops that follow are captured
(the client's current stream is capturing) or run (it made another stream current), and
``Graph.launch``/``Graph.upload`` are ``graph.launch``/``graph.upload`` on a graph's handle.
The device does the capturing (``device.captures``: devices/cupy_capture.py on a GPU, where
CuPy captures; devices/host_capture.py on the NumPy device, which records); this module
checks what the client sent, keeps the graphs in the session's object table (dropped as
any remote object is, their memory with them), and keeps the worker's own machinery out of
a capture: splitting long ops into pieces times them and compares their bits on the host,
so it is off while a capture is in progress.

Anything malformed is a ``ProtocolError``; a call out of turn (a second capture, an end
with none) is CUDA's ``cudaErrorIllegalState``, as CuPy would report it.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import ProtocolError

__all__ = ["UserGraphs"]


class UserGraphs:
    """The executor's graph calls (one per session)."""

    def __init__(self, executor: Any) -> None:
        self.x = executor
        self._splitter: Any = None   # the executor's, set aside while a capture is in progress
        self.captures = 0            # captures ended with a graph
        self.launches = 0

    @property
    def _captures(self) -> Any:
        captures = self.x.device.captures
        if captures is None:
            raise NotImplementedError(f"CUDA graphs are not available on the {self.x.device.kind} "
                                      "device")
        return captures

    def call(self, name: str, target: Any, args: list) -> Any:
        """Run the graph call *name* (``graph.begin`` ...); returns its value (None)."""
        if name == "graph.begin":
            mode, routed = _two(args, "graph.begin takes (mode, routed)")
            if (mode is not None and type(mode) is not int) or type(routed) is not bool:
                raise ProtocolError("graph.begin takes (None or an int mode, a bool)")
            self._captures.begin(mode, routed)
            self._splitter, self.x.splitter = self.x.splitter, None
            return None
        if name == "graph.route":
            if len(args) != 1 or type(args[0]) is not bool or target is not None:
                raise ProtocolError("graph.route takes one bool")
            captures = self._captures
            if captures.active is None:
                raise ProtocolError("graph.route without a capture in progress")
            captures.route(args[0])
            return None
        if name == "graph.end":
            if args or (target is not None and (type(target) is not int or target <= 0)):
                raise ProtocolError("graph.end takes the new graph's handle (a positive int) "
                                    "or None")
            captures = self._captures
            try:
                graph = captures.end(keep=target is not None)
            finally:
                if captures.active is None and self._splitter is not None:
                    self.x.splitter, self._splitter = self._splitter, None
            if graph is not None:
                self.x.table.put_object(target, graph)
                self.captures += 1
            return None
        if name in ("graph.launch", "graph.upload"):
            if args or type(target) is not int:
                raise ProtocolError(f"{name} takes a graph's handle")
            captures = self._captures
            graph = self.x.table.get_object(target, captures.graph_type)
            if captures.routed:
                raise NotImplementedError(
                    "launching or uploading a graph while a stream captures is not supported "
                    "by gpu-workbench: end the capture first, or make a stream that is not "
                    "capturing current")
            if name == "graph.launch":
                captures.launch(graph)
                self.launches += 1
            else:
                captures.upload(graph)
            return None
        raise ProtocolError(f"unknown CUDA call {name!r}")

    def figures(self) -> dict:
        """Captures ended with a graph, launches, whether one is in progress."""
        captures = self.x.device.captures
        return {"captures": self.captures, "launches": self.launches,
                "capturing": captures is not None and captures.active is not None}


def _two(args: list, what: str) -> tuple:
    if len(args) != 2:
        raise ProtocolError(what)
    return args[0], args[1]
