"""Maps that travel inside other messages, or as an op's value in a reply's ``v``: a device's
facts, a session's and the pool's figures. One ``TypedDict`` per message; the package's
docstring (``__init__``) says how they are read and rendered, and every name is taken from
the package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, Any, NotRequired, TypedDict

__all__ = ["DeviceInfo", "Accelerators", "RuntimeFacts", "StretchFigures", "GraphFigures",
           "SplitFigures", "SessionFigures", "PoolFigures"]


class DeviceInfo(TypedDict):
    """A device as its worker describes it (``Device.info()``): in ``ready``, the hello's
    reply (``Session.device``), the status's devices and a session's figures."""
    kind: Annotated[str, "the device's kind: \"cupy\" (a GPU) or \"numpy\" (the host's CPU)"]
    index: Annotated[int, "the device's number in its spec (cuda:1 → 1)"]
    name: NotRequired[Annotated[str, "a name for people (the GPU's, or \"NumPy (host CPU)\")"]]
    compute_capability: NotRequired[Annotated[str, "the GPU's compute capability, \"9.0\" (GPU only)"]]
    multiprocessors: NotRequired[Annotated[int, "the GPU's multiprocessor count (GPU only)"]]
    memory_total: NotRequired[Annotated[int | None, "the device's memory, bytes (None on the host)"]]
    memory_free: NotRequired[Annotated[int, "the GPU's free memory when described (ready, hello: the worker's start), bytes (GPU only)"]]
    cupy: NotRequired[Annotated[str, "the worker's CuPy version (GPU only)"]]
    cuda_runtime: NotRequired[Annotated[int, "the CUDA runtime version, as CUDA numbers it (12040) (GPU only)"]]
    numpy: NotRequired[Annotated[str, "the worker's NumPy version (host only)"]]
    stream_bytes: Annotated[int | None, "transfers larger than this stream in chunks (None: never; the client's upload threshold)"]


class Accelerators(TypedDict):
    """CuPy's accelerator switches (``cupy._core.get_*_accelerators``), by CuPy's numbers."""
    elementwise: Annotated[list[int], "the elementwise accelerators, in order of preference"]
    reduction: Annotated[list[int], "the reduction accelerators"]
    routine: Annotated[list[int], "the routine accelerators"]


class RuntimeFacts(TypedDict):
    """A device's CUDA facts (``Device.runtime_facts()``), sent in ``ready`` and the hello's
    reply (``Session.runtime``), from which the client's ``cupy.cuda`` answers."""
    properties: Annotated[dict[str, Any], "cudaDeviceProp's fields by CuPy's names (runtime.getDeviceProperties); a few zeros on the host"]
    attributes: Annotated[dict[str, int], "the device's attributes (Device.attributes), by name"]
    attribute_codes: NotRequired[Annotated[dict[str, int], "CUDA's number of each cudaDevAttr* constant (GPU only)"]]
    runtime_version: Annotated[int, "runtime.runtimeGetVersion() (0 on the host)"]
    driver_version: Annotated[int, "runtime.driverGetVersion() (0 on the host)"]
    build_version: Annotated[int, "driver.get_build_version() (0 on the host)"]
    is_hip: Annotated[bool, "whether the pool's CuPy is built for ROCm"]
    pci_bus_id: Annotated[str, "the device's PCI bus id (\"\" on the host)"]
    slice_copy: Annotated[bool, "CuPy's ENABLE_SLICE_COPY"]
    accelerators: Annotated[Accelerators, "CuPy's accelerator switches when the worker started"]


class StretchFigures(TypedDict):
    """A session's stretch replay (docs/stretch-replay.md), as its worker counts it."""
    held: Annotated[int, "stretches the worker holds for the session"]
    replays: Annotated[int, "replay entries run"]
    graphed: Annotated[int, "of them, served by CUDA graphs (the NumPy device: by its recorded calls)"]
    fallbacks: Annotated[int, "of them, re-run from their records because a captured graph's guards failed"]
    ahead: Annotated[int, "of them, answered by the replay the worker ran ahead, as the last one was answered (worker/run_ahead.py)"]
    refused: Annotated[int, "offers not kept (GPUWB_GRAPHS=0, too many held, too long)"]
    graph_bytes: Annotated[int, "device memory the captured graphs hold (counted in memory_used)"]


class GraphFigures(TypedDict):
    """A session's own CUDA graphs (CuPy's graph API, docs/architecture.md), as its worker
    counts them."""
    captures: Annotated[int, "captures ended with a graph"]
    launches: Annotated[int, "graph launches run"]
    capturing: Annotated[bool, "whether a capture is in progress"]


class SplitFigures(TypedDict):
    """A session's long ops run in pieces (docs/fair-share.md, "Long ops"), as its worker
    counts them; null where the worker splits nothing (no arbiter, or no
    ``GPUWB_SPLIT_PIECE_US``)."""
    ops: Annotated[int, "ops run in pieces"]
    equal: Annotated[int, "op classes the worker found to give the whole op's bits in pieces"]
    unequal: Annotated[int, "long op classes whose pieces did not: run whole"]


class SessionFigures(TypedDict):
    """The value of a ``KIND_INFO`` op (``Session.memory_info()``, ``%gpu memory``):
    worker → client, in a batch reply's ``v``."""
    memory_used: Annotated[int, "bytes the session's arrays hold on the device now"]
    memory_limit: Annotated[int, "the session's memory limit, bytes"]
    arrays: Annotated[int, "arrays the session holds"]
    ops: Annotated[int, "ops the worker has run for the session"]
    prefetched: Annotated[int, "arrays sent with a replay's reply before the client asked for them (a batch header's G)"]
    device: Annotated[DeviceInfo, "the session's device"]
    stretches: Annotated[StretchFigures, "the session's stretch replay"]
    graphs: Annotated[GraphFigures, "the session's own CUDA graphs (CuPy's graph API)"]
    split: Annotated[SplitFigures | None, "the session's long ops in pieces (None: not splitting)"]


class PoolFigures(TypedDict):
    """The value of the CUDA call ``pool.figures`` (``cupy.cuda.MemoryPool``'s figures,
    ``runtime.memGetInfo``): worker → client, in a batch reply's ``v``."""
    used_bytes: Annotated[int, "MemoryPool.used_bytes()"]
    total_bytes: Annotated[int, "MemoryPool.total_bytes()"]
    n_free_blocks: Annotated[int, "MemoryPool.n_free_blocks()"]
    limit: Annotated[int | None, "the pool's limit as the session sees it: its own set_limit, or the session's limit"]
