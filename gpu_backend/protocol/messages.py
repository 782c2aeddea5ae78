"""The shape of every message, in one place.

Every control message is a msgpack map. Each map's keys are declared here, one
``TypedDict`` per message, grouped by channel in :data:`MESSAGES`; each field is
``Annotated[type, "what it means"]``, and each class's docstring says who sends it to
whom and when. The tables of docs/protocol.md ("Messages, field by field") are
rendered from them by :mod:`gpu_backend.protocol.message_docs` (``python -m
gpu_backend.protocol --write docs/protocol.md`` rewrites them), and tests/gpu_backend/test_wire_schema.py holds the code's
literals and the page to these classes. They describe; nothing validates messages
against them at run time. The op records that follow a batch's header are lists, not
maps: docs/protocol.md describes them, and the ``KIND_*`` constants below name them.

Payload frames are raw array bytes, one frame per array, sent and received
without a copy (``copy=False``; the receiver wraps the frame's own memory with
``numpy.frombuffer``). ZeroMQ delivers a multipart message only when all of it
has arrived, so splitting an array into several frames would pipeline nothing
and would force the receiver to reassemble it: one frame is both simpler and
faster (see docs/protocol.md).
"""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

import typing
from typing import Annotated, Any, Literal, NotRequired, TypedDict

__all__ = [
    "PROTOCOL_VERSION", "KIND_FUNCTION", "KIND_METHOD", "KIND_OPERATOR",
    "KIND_ATTRIBUTE", "KIND_UPLOAD", "KIND_INFO", "KIND_KERNEL", "STREAM_CHUNK_BYTES", "KIND_DOWNLOAD", "KIND_CUDA", "KIND_OBJECT", "FLAG_C", "FLAG_F", "FLAG_OWN",
    # the channels and the registry
    "FRONT_DOOR", "POOL_STATUS", "SESSION_WORKER", "WORKER_CONTROL", "WORKER_ZYGOTE", "ARBITER",
    "DEVICE_FACTS", "HOST_AGENT", "ADMINISTRATION", "CHANNELS", "MESSAGES", "fields_of",
    # front door
    "HelloRequest", "HelloReply", "HeartbeatRequest", "HeartbeatReply", "StatusRequest",
    "StatusReply", "CloseRequest", "CloseReply", "EndRequest", "EndReply", "PingRequest",
    "PingReply", "ErrorReply",
    # pool status
    "StatusDevice", "StatusHost", "StatusUser", "StatusAccount", "StatusSession", "EndedSession", "StatusSpin",
    "ShareHistory", "DeviceSamples",
    # session worker
    "BatchHeader", "CancelRequest", "WorkerCloseRequest", "StagingRequest", "LinkAuth",
    "UploadChunk", "BatchReply", "ClosedReply", "StagingReply", "StagingOffer",
    "StagedDownloadChunk", "WaitNotice", "WAIT_NOTICE_VERSION",
    # worker control
    "ControlReady", "ControlUsage", "ControlEnded", "ControlGrow", "ControlGrant",
    "ControlAssign", "ControlGranted", "QuotaRefusal", "ControlStop", "ControlReclaim",
    "ControlSwap", "ControlSwapped", "ControlSwapDue", "ControlRoom", "ControlRoomed",
    # worker zygote
    "ZygoteFork", "ZygoteReady", "ZygoteForked", "ZygoteExited",
    # host agent
    "AgentJoin", "AgentWelcome", "AgentLoad", "AgentRelay", "AgentExited", "AgentSpawn",
    "AgentWorkerEnd", "AgentAttach", "AgentDetach", "AgentWeights", "AgentLeave", "AgentStop",
    # arbiter
    "ArbiterWant", "ArbiterIdle", "ArbiterDone", "ArbiterUsed", "ArbiterRelease", "ArbiterGrant", "ArbiterReady", "ArbiterCompany",
    "ArbiterYield",
    # moves and administration
    "WhereRequest", "WhereReply", "ControlPark", "ControlUnpark", "ControlRelease",
    "ControlParked", "ControlAdopted", "ControlElsewhere", "ControlStay",
    "AdminDrain", "AdminUndrain", "AdminMove", "AdminMoves", "AdminRestart", "AdminReply",
    "ParkedSessions", "ParkedSession", "AdminMoveRow",
    "AdminSessionRow",
    # device facts
    "DeviceInfo", "RuntimeFacts", "Accelerators", "StretchFigures", "GraphFigures", "SplitFigures",
    "SessionFigures", "PoolFigures",
]

#: Bumped whenever a message changes shape; the front door refuses other versions.
PROTOCOL_VERSION = 2

KIND_FUNCTION = "f"    # target None, name from api.FUNCTIONS
KIND_METHOD = "m"      # target = handle, name from api.METHODS
KIND_OPERATOR = "o"    # name from api.OPERATORS, args = operands
KIND_ATTRIBUTE = "a"   # target = handle, name from api.ATTRIBUTES
KIND_UPLOAD = "u"      # name = dtype, args = [shape] (data: next payload frame)
                       # or [shape, chunks] (data: that many chunk messages follow)
KIND_INFO = "i"        # the session's memory and device figures, as a value
KIND_KERNEL = "k"      # name = "elementwise" | "raw" | ... | "fuse", target = the definition map, args = call args
KIND_DOWNLOAD = "d"    # target = handle; data in the reply's next payload frame
KIND_CUDA = "c"        # name from api.CUDA_CALLS: the session's CUDA events and memory pool
KIND_OBJECT = "j"      # name = a class of api.OBJECTS (create one under out: target None)
                       # or "class.method" / "class.attribute" (target = the object's id)

FLAG_C, FLAG_F, FLAG_OWN = 1, 2, 4

#: Uploads to a GPU larger than this stream as separate chunk messages
#: ``[{"k": key, "u": seq, "i": index}, bytes]`` after their batch, so the
#: worker copies chunk i to the GPU while ZeroMQ receives chunk i + 1.
#: Downloads from a GPU larger than this stream the same way after the reply
#: (a "d" entry then has a fourth field, the chunk count; each chunk is a
#: one-frame message that the client receives straight into the result).
STREAM_CHUNK_BYTES = 8 << 20

#: The version of :class:`WaitNotice` the worker sends (its ``notice`` field); a client
#: reads the versions it knows and skips the others, still waiting for the reply.
WAIT_NOTICE_VERSION = 1


# ==================================================================== device facts
# (defined first: the messages below carry them)

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


# ==================================================================== pool status

class StatusDevice(TypedDict):
    """A row of a :class:`StatusReply`'s ``devices``."""
    device: Annotated[str, "the device as the pool names it: \"cuda:0\", \"cpu:0\"; across hosts \"HOST/cuda:0\""]
    host: Annotated[str | None, "the host it is on, in a pool across hosts (None: the pool's own)"]
    info: Annotated[DeviceInfo, "as one of its workers reported it ({} before any was ready)"]
    sessions: Annotated[int, "its open sessions"]
    memory_used: Annotated[int, "bytes its sessions use (their last usage reports)"]
    spares_ready: Annotated[int, "warm workers waiting for a session"]


class StatusUser(TypedDict):
    """A row of a :class:`StatusReply`'s ``users``: one user on one device."""
    user: Annotated[str, "the user's name"]
    device: Annotated[str, "the device"]
    weight: Annotated[float, "the user's weight"]
    target_share: Annotated[float, "weight over the weights of the users with work there (0 to 1)"]
    share: Annotated[float, "the user's share of the device time used there in the last 10 s (0 to 1)"]
    waited: Annotated[float | None, "of the wall time the user's batches spent in their workers there in the last 10 s, the part they waited for the device while other users held it (0 to 1; None: no batch then)"]
    sessions: Annotated[int, "the user's sessions there"]
    waiting: Annotated[int, "the user's sessions there waiting for the device (the arbiter's)"]
    holding: Annotated[bool, "whether a session of the user holds the device"]
    memory_used: Annotated[int, "bytes the user's sessions there use"]
    memory_quota: Annotated[int | None, "the user's memory quota over all devices, bytes (None: none)"]
    memory_granted: Annotated[int | None, "bytes granted to the user's sessions there under that quota (None: no quota)"]


class StatusAccount(TypedDict):
    """A row of a :class:`StatusReply`'s ``accounts``: one user of the pool, with or without
    sessions (the users file's users; ``default`` in single-token mode)."""
    user: Annotated[str, "the user's name"]
    weight: Annotated[float, "the user's weight"]
    memory_quota: Annotated[int | None, "the user's memory quota over all devices, bytes (None: none)"]
    sessions_quota: Annotated[int | None, "how many sessions the user may have at once (None: no limit)"]
    sessions: Annotated[int, "the user's open sessions, all devices"]
    memory_used: Annotated[int, "bytes the user's sessions use, all devices"]
    oom_ago: Annotated[float | None, "seconds since an op of one of the user's open sessions ran out of device memory (None: none did)"]


class StatusSession(TypedDict):
    """A row of a :class:`StatusReply`'s ``sessions``."""
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    client: Annotated[str, "the hello's user label (user@host)"]
    label: Annotated[str, "what opened it: the hello's label (a notebook's path, a script's name); \"\" in the status of another user"]
    device: Annotated[str, "its device"]
    memory_used: Annotated[int, "bytes it uses (its last usage report)"]
    memory_limit: Annotated[int, "its memory limit, bytes"]
    memory_granted: Annotated[int | None, "bytes granted under its user's quota (None: no quota)"]
    arrays: Annotated[int, "arrays it holds"]
    ops: Annotated[int, "ops its worker has run"]
    device_seconds: Annotated[float, "device seconds its worker measured"]
    idle: Annotated[float, "seconds since its worker last ran an op (since it opened, if none has run)"]
    heartbeat: Annotated[float, "seconds since its client's last heartbeat"]
    oom_ago: Annotated[float | None, "seconds since one of its ops ran out of device memory (None: none did)"]
    age: Annotated[float, "seconds since it opened"]
    swapped: Annotated[int, "bytes of its arrays swapped out, to its host's memory or the pool's swap directory (0: none; they come back at its next op)"]
    swapped_host: NotRequired[Annotated[int, "of them, bytes in its host's memory (the rest are in its swap file)"]]
    swaps: Annotated[int, "times it was swapped out"]
    parked: NotRequired[Annotated[bool, "its worker has exited (idle and swapped out, or moving): its arrays wait in the swap directory for its next op"]]
    swap_seconds: Annotated[float, "how long its last swap, out or in, took"]


class EndedSession(TypedDict):
    """A row of a :class:`StatusReply`'s ``ended``."""
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    device: Annotated[str, "its device"]
    ops: Annotated[int, "ops its worker ran"]
    memory_used: Annotated[int, "bytes it used at its last report"]
    age: Annotated[float, "seconds it was open"]
    reason: Annotated[str, "why it ended (\"lease expired\", \"closed by the client\", a device fault, …)"]


class StatusHost(TypedDict):
    """A row of a :class:`StatusReply`'s ``hosts``: one GPU host of a pool across hosts."""
    host: Annotated[str, "its name in the pool (its devices are HOST/…)"]
    address: Annotated[str, "where clients reach its workers"]
    devices: Annotated[list[str], "its devices, as the pool names them"]
    workers: Annotated[int, "worker processes its agent keeps"]
    sessions: Annotated[int, "open sessions on it"]
    joined: Annotated[float, "seconds since it joined"]
    heard: Annotated[float, "seconds since its agent last reported"]


class StatusSpin(TypedDict):
    """A :class:`StatusReply`'s ``spin``: how many workers may keep polling after a message,
    and for how long."""
    slots: Annotated[int, "the pool's spin slots (0: none)"]
    window_ms: Annotated[float, "how long a worker holding a slot polls after each message, ms"]


class ShareHistory(TypedDict):
    """A :class:`StatusReply`'s ``history`` entry for one device (``UsageLog.history``)."""
    t0: Annotated[float, "the first second's start (Unix time)"]
    step: Annotated[float, "seconds per entry (1.0)"]
    users: Annotated[dict[str, list[float]], "per user, device seconds used in each step"]
    devices: Annotated[dict[str, dict[str, list[float]]], "the same per device (here: this one device)"]
    waited: Annotated[dict[str, list[float]], "per user, wall seconds its batches waited for the device while others held it, in each step (the users' side)"]
    worked: Annotated[dict[str, list[float]], "per user, wall seconds its batches took in their workers, waits included, in each step"]


class DeviceSamples(TypedDict):
    """A :class:`StatusReply`'s ``device_history`` entry for one device
    (``device_samples.DeviceSampler``): the pool samples each device every ``step`` seconds
    and keeps the last 10 minutes. A list's None: no figure at that sample."""
    t0: Annotated[float, "the first sample's time (Unix time)"]
    step: Annotated[float, "seconds between samples"]
    busy: Annotated[list[float | None], "the part of each step the device ran sessions' work, by the pool's accounting (device time its workers measured; 0 to 1)"]
    memory: Annotated[list[int | None], "bytes the device's sessions held (their usage reports)"]
    utilization: Annotated[list[float | None] | None, "NVML's GPU utilisation at each sample (0 to 1); None where NVML is not read"]
    nvml_memory: Annotated[list[int | None] | None, "device memory in use as NVML reports it (every process's), bytes; None where NVML is not read"]
    memory_total: Annotated[int | None, "the device's memory, bytes (None on the host)"]
    nvml: Annotated[str, "\"ok\" while NVML is read, else why not (not a GPU, nvidia-ml-py not installed, no driver)"]


# ==================================================================== front door

class HelloRequest(TypedDict):
    """client → front door, after a ping: open a session. Answered with
    :class:`HelloReply` once a warm worker is assigned, or with :class:`ErrorReply`."""
    t: Annotated[Literal["hello"], "the message type"]
    v: Annotated[int, "the client's protocol version (PROTOCOL_VERSION; another is VersionMismatchError)"]
    token: Annotated[str, "who the user is: a users file's NAME.SECRET, or the pool's one shared token"]
    user: Annotated[str, "the client's label for itself (user@host; 64 characters kept): shown in status, not an identity"]
    label: NotRequired[Annotated[str, "what opens the session: the notebook's path (JPY_SESSION_NAME) or the script's name (the last 160 characters kept); shown to its user in status"]]
    memory_limit: NotRequired[Annotated[int | None, "the session's memory limit, bytes (default: the pool's; at most the user's quota)"]]
    apart_from: NotRequired[Annotated[list[str], "the user's own open sessions: place this one on a device none of them holds"]]


class HelloReply(TypedDict):
    """front door → client: the session is open; ops now go to its worker."""
    ok: Annotated[Literal[True], "the request succeeded"]
    session: Annotated[str, "the session's id"]
    key: Annotated[bytes, "the session key (32 random bytes): every message to the worker, heartbeat and close carries it"]
    worker_port: Annotated[int, "the worker's tcp port, on the front door's host unless worker_host says otherwise"]
    worker_host: NotRequired[Annotated[str, "the worker's host (a name or IP, IPv6 in brackets), in a pool across hosts (docs/cluster.md)"]]
    worker_ipc: Annotated[str | None, "the worker's Unix socket (unix://…), used by a client of the ipc:// door; None: none"]
    device: Annotated[DeviceInfo, "the worker's device"]
    runtime: Annotated[RuntimeFacts, "the device's CUDA facts, from which cupy.cuda answers"]
    lease_timeout: Annotated[float, "seconds without a heartbeat after which the pool ends the session"]
    memory_limit: Annotated[int, "the session's memory limit, bytes"]


class HeartbeatRequest(TypedDict):
    """client → front door, every ``lease_timeout / 4`` seconds from the client's heartbeat
    thread: the session is still in use."""
    t: Annotated[Literal["hb"], "the message type"]
    session: Annotated[str, "the session's id"]
    key: Annotated[bytes, "the session key"]


class HeartbeatReply(TypedDict):
    """front door → client: whether the session lives on."""
    ok: Annotated[Literal[True], "the request succeeded"]
    alive: Annotated[bool, "False: the session has ended (lease expired, worker stopped) or the key is wrong"]
    reason: NotRequired[Annotated[str, "why the session ended, when alive is False and the pool still knows (its last 200 ended sessions)"]]
    moves: NotRequired[Annotated[int, "how often the pool has moved the session to another worker (more than the client knows: ask where, WhereRequest)"]]


class StatusRequest(TypedDict):
    """client → front door (``%gpu status``, ``gpuwb status``, the Jupyter server
    extension's watcher): the pool's devices, users and sessions."""
    t: Annotated[Literal["status"], "the message type"]
    token: Annotated[str, "a user's token (any user may ask)"]
    history: NotRequired[Annotated[float, "also each device's per-user device seconds, and its samples (busy, memory, NVML), over this many seconds (0 < history <= 600)"]]


class StatusReply(TypedDict):
    """front door → client: the pool's status (``pool_status.build_status``; also what
    ``LocalPool.door.status()`` returns, less ``ok`` and ``you``)."""
    ok: Annotated[Literal[True], "the request succeeded"]
    address: Annotated[str, "the front door's tcp:// address"]
    local_address: Annotated[str | None, "its same-host ipc:// address, or None"]
    policy: Annotated[str, "the arbiter's policy: \"fair\", \"fifo\" or \"none\""]
    users_mode: Annotated[str, "\"file\" (a users file) or \"single\" (one shared token)"]
    devices: Annotated[list[StatusDevice], "one row per device"]
    users: Annotated[list[StatusUser], "one row per user and device with sessions or recent device time"]
    accounts: Annotated[list[StatusAccount], "one row per user of the pool, with sessions or not"]
    sessions: Annotated[list[StatusSession], "the open sessions (not those closing)"]
    ended: Annotated[list[EndedSession], "the last 50 sessions that ended"]
    lease_timeout: Annotated[float, "seconds without a heartbeat after which a session ends"]
    pid: Annotated[int, "the pool's process id"]
    spin: Annotated[StatusSpin, "the workers' spin slots"]
    uptime: Annotated[float, "seconds since the pool started"]
    hosts: Annotated[list[StatusHost] | None, "a pool across hosts: one row per host (None: a single-host pool)"]
    you: Annotated[str, "the user the token signed in as"]
    history: NotRequired[Annotated[dict[str, ShareHistory], "per device, its users' device seconds (when asked for)"]]
    device_history: NotRequired[Annotated[dict[str, DeviceSamples], "per device, its samples over the same seconds (when history is asked for)"]]


class CloseRequest(TypedDict):
    """client → front door, after telling its worker ``close``: end the session (its
    worker reports its last figures and exits)."""
    t: Annotated[Literal["close"], "the message type"]
    session: Annotated[str, "the session's id"]
    key: Annotated[bytes, "the session key"]


class CloseReply(TypedDict):
    """front door → client: answered whether or not the session was open."""
    ok: Annotated[Literal[True], "the request succeeded"]


class EndRequest(TypedDict):
    """client → front door (the Jupyter server extension, for the Lab panel's "End"): end
    one of the token's user's own sessions, whose key the asker need not hold. The pool
    kills its worker, as when its lease expires; a session of another user is refused with
    NotAllowedError."""
    t: Annotated[Literal["end"], "the message type"]
    token: Annotated[str, "the user's token: only that user's sessions may be ended"]
    session: Annotated[str, "the session's id"]


class EndReply(TypedDict):
    """front door → client: the answer to :class:`EndRequest`."""
    ok: Annotated[Literal[True], "the request succeeded"]
    ended: Annotated[bool, "False: no open session has that id (it had ended, or was closing)"]


class PingRequest(TypedDict):
    """client → front door, before every hello: is a pool there? No token; answered at
    once (a hello may wait for a worker); its handshake tells a refused CURVE key."""
    t: Annotated[Literal["ping"], "the message type"]


class PingReply(TypedDict):
    """front door → client."""
    ok: Annotated[Literal[True], "the request succeeded"]
    v: Annotated[int, "the pool's protocol version"]


class ErrorReply(TypedDict):
    """front door → client: the answer to any request that failed (the pool keeps serving).
    A throttled sign-in's refusal is held by the pool until its wait is over."""
    ok: Annotated[Literal[False], "the request failed"]
    error: Annotated[list[str], "[class name, text]: a class of errors.ERROR_CLASSES, which the client raises"]
    retry_after: NotRequired[Annotated[float, "SignInThrottledError only: ask again after this many seconds (0.0 when the pool held the reply)"]]


# ==================================================================== session worker

class BatchHeader(TypedDict):
    """client → worker: a batch of ops. The header is the first msgpack object of frame 0;
    the op records follow it in the same frame; payload frames follow. Answered with
    :class:`BatchReply`."""
    k: Annotated[bytes, "the session key"]
    b: Annotated[int, "the batch's number (1, 2, …): its reply carries it"]
    n: Annotated[int, "how many ops the batch holds"]
    r: Annotated[int | None, "the seq of the failed op whose error the client has seen (after a failure the worker skips ops until then), or None"]
    y: NotRequired[Annotated[Literal[1], "wait for the device to finish before replying (a sync point)"]]
    g: NotRequired[Annotated[Literal[1], "time the batch's device work (CUDA events): the reply's g"]]
    O: NotRequired[Annotated[int, "offer: keep this batch's ops as the stretch of this id (the client's) if they all run; the reply's h says it is kept"]]
    T: NotRequired[Annotated[list[Any], "replay: [stretch id, first op's seq, [input handles], [parameter values], [result handles], optionally [result slots whose metadata the reply is to carry: absent, all it keeps]] of a held stretch, instead of op records; the batch's records after it are the client's frees; the message's frames after its first are the data of the stretch's uploads, one each in their order (none for an early replay, `S`; any other count a `ProtocolError`) (docs/stretch-replay.md)"]]
    F: NotRequired[Annotated[list[int], "with T: handles of arrays the client dropped before the stretch's first op, freed before it runs (the frees in its course follow it as records)"]]
    G: NotRequired[Annotated[list[int], "with T (ignored without): at most 16 handles of arrays the client expects to download right after the replay (kernelproxy/trailing_downloads.py): once it has run without error, each is downloaded as a download op would be, as one frame, its entry in the reply's d under the seq -handle; one the session does not hold, one over the device's chunk size, and all after a download that fails are left out (the client downloads those itself); a malformed list fails the batch before anything of it is done"]]
    S: NotRequired[Annotated[Literal[1], "with T: an early replay, sent before the client's run of the stretch reached its sync point (docs/stretch-replay.md, \"Early replay\"): the inputs the stretch drops are kept (the client frees them once its run matched)"]]
    A: NotRequired[Annotated[list[Any], "[batch, [result handles]]: the early replay sent as that batch did not match the client's run: the worker frees those handles and forgets that batch's error, before this batch runs"]]
    D: NotRequired[Annotated[list[int], "stretch ids the client lets go (their replays were not faster): the worker drops them and their graphs' memory"]]
    p: NotRequired[Annotated[Literal[1], "the client reads wait notices (WaitNotice) before this batch's reply, and shows them: without it the worker sends none"]]


class CancelRequest(TypedDict):
    """client → worker, at an interrupt: drop the queued work (read between ops, and
    before a batch starts). Not answered; the batches cancelled answer with ``c``."""
    k: Annotated[bytes, "the session key"]
    c: Annotated[int, "cancel every batch up to this number"]


class WorkerCloseRequest(TypedDict):
    """client → worker, when the session closes: the worker ends after answering
    :class:`ClosedReply`."""
    k: Annotated[bytes, "the session key"]
    t: Annotated[Literal["close"], "a request instead of a batch"]
    b: Annotated[int, "0 (the ClosedReply repeats it)"]


class StagingRequest(TypedDict):
    """client → worker, over the Unix link right after the auth message, when the device
    streams: ask for a staging ring. Answered with :class:`StagingReply`."""
    k: Annotated[bytes, "the session key"]
    t: Annotated[Literal["staging"], "a request instead of a batch"]


class LinkAuth(TypedDict):
    """client → worker, the first message on a Unix link (one frame, at most 4 KiB, within
    5 s): until it has come whole the worker waits for nothing else from that peer, and it
    drops the connection at anything else. Not answered."""
    t: Annotated[Literal["auth"], "the message type"]
    k: Annotated[bytes, "the session key"]


class UploadChunk(TypedDict):
    """client → worker, after the batch of a streamed upload: one chunk, its bytes in the
    next frame, or (staged) in a slot of the ring, the message then one frame. Not
    answered; chunks of an upload skipped after an error are dropped."""
    k: Annotated[bytes, "the session key"]
    u: Annotated[int, "the sequence number of the upload op"]
    i: Annotated[int, "the chunk's index within its upload"]
    s: NotRequired[Annotated[int, "staged: the slot holding the bytes (g % slots)"]]
    g: NotRequired[Annotated[int, "staged: the session's staged upload chunks before this one"]]
    n: NotRequired[Annotated[int, "staged: the chunk's length, bytes (1 to slot_bytes)"]]


class BatchReply(TypedDict):
    """worker → client: a batch's results (frame 0; the downloads' data in frames 1…).
    Also the answer to a malformed message or a refused key (``b`` None)."""
    b: Annotated[int | None, "the batch's number (None: no batch could be read)"]
    m: Annotated[bytes, "msgpack of [[id, shape, dtype, strides, flags], …]: the batch's new arrays the session still holds"]
    v: Annotated[list[list[Any]], "[[seq, value], …]: the values ops returned"]
    d: Annotated[list[list[Any]], "[[seq, dtype, shape] or [seq, dtype, shape, chunks], …]: downloads, in the next frames or streamed after; a negative seq is the handle of an array the header's G asked for, negated (never streamed)"]
    e: Annotated[list[Any] | None, "[seq, class name, text, None] of the first op that failed, or None"]
    w: Annotated[list[list[Any]], "[[seq, category, text, module?], …]: warnings ops raised"]
    x: Annotated[int, "ops run"]
    s: Annotated[int, "ops skipped (after an error or a cancel)"]
    t: NotRequired[Annotated[float, "seconds the worker spent on the message"]]
    c: NotRequired[Annotated[Literal[1], "the batch was cancelled: ops after the first x never ran"]]
    g: NotRequired[Annotated[float, "device seconds of the batch's work (when the header's g asked)"]]
    z: NotRequired[Annotated[str, "why the worker has ended (a device fault, the pool has gone): the session's last reply"]]
    h: NotRequired[Annotated[int, "the stretch id the header's O offered: the worker holds it now"]]
    hm: NotRequired[Annotated[list, "with h: the held stretch's metadata for the client's template, [inputs, results]: each input's entry as the batch began and each result's as its op made it ([handle, shape, dtype, strides, flags], None where no array came of it)"]]
    hs: NotRequired[Annotated[Literal[1], "with h: the held stretch may be replayed early (header S): it writes into no array, draws no random numbers and makes only arrays and values"]]
    f: NotRequired[Annotated[Literal[1, 2], "the header's T replay did not run through graphs: 1, from its records (a guard failed, the stretch has none), or not at all (skipped after an error, cancelled); 2, re-run from its records on purpose, paced beside others (its graphs still fit: the stretch stays held)"]]
    P: NotRequired[Annotated[bytes, "pushed before its batch came (gpu_backend/worker/pushed_replies.py): the bytes that batch's one frame must be for this to be its reply; the client drops it otherwise and reads the worker's own"]]
    C: NotRequired[Annotated[int, "with P: the push's chain; the client drops every later push of a chain one push of which its batch did not match"]]
    K: NotRequired[Annotated[int, "with P: the last batch the worker had read when it pushed (the batches a push answered up to it are confirmed)"]]
    L: NotRequired[Annotated[Literal[1], "the steady lane answered this early replay (header S) and would push its loop's replies were its messages sent whole: the client's early plan for the stretch sends them whole (kernelproxy/early_replay.py, EarlyPlan.lane)"]]


class ClosedReply(TypedDict):
    """worker → client: the answer to :class:`WorkerCloseRequest`."""
    b: Annotated[int | None, "the close request's b"]
    closed: Annotated[Literal[True], "the worker is ending"]


class StagingOffer(TypedDict):
    """A :class:`StagingReply`'s ring (``gpu_backend/protocol/staging.py``)."""
    slots: Annotated[int, "slots in the ring"]
    slot_bytes: Annotated[int, "bytes per slot"]


class StagingReply(TypedDict):
    """worker → client: the answer to :class:`StagingRequest`, with the ring's memfd in the
    message's SCM_RIGHTS ancillary data when there is one."""
    staging: Annotated[StagingOffer | None, "the ring, or None (no memfd on the host, a device that does not stream, a tcp:// client)"]


class StagedDownloadChunk(TypedDict):
    """worker → client, after a reply whose ``d`` entry has a chunk count, through a ring:
    one chunk of the download, its bytes in a slot (one frame). Without a ring each chunk
    is a bare frame of bytes."""
    s: Annotated[int, "the slot holding the bytes (g % slots)"]
    g: Annotated[int, "the session's staged download chunks before this one"]
    n: Annotated[int, "the chunk's length, bytes"]


class WaitNotice(TypedDict):
    """worker → client, before a batch's :class:`BatchReply`, while the batch waits before
    its ops run: for its session's arrays to come back from host memory or the swap file
    (``swap_in``), or for room on the device while the pool swaps other sessions out
    (``room``). Only to a batch whose header has ``p`` (a client that does not know notices
    never gets one): a first when the wait starts, updates as bytes come back (at most every
    0.25 s), a last with ``end``. A map with ``notice`` is never a reply: the client shows
    it (kernelproxy's progress factory) and waits on for the reply."""
    notice: Annotated[int, "the notice's version (WAIT_NOTICE_VERSION, 1): a client skips versions it does not know"]
    b: Annotated[int, "the batch that waits"]
    w: Annotated[Literal["swap_in", "room"], "what it waits for: its arrays coming back (swap_in), or room on the device (room)"]
    done: Annotated[int, "bytes brought back so far (room: what the others' swap-outs freed, in its last notice)"]
    total: Annotated[int, "bytes to bring back (room: bytes short; 0: unknown)"]
    end: NotRequired[Annotated[Literal[1], "the wait is over: the notice is its last"]]


# ==================================================================== worker control

class ControlReady(TypedDict):
    """worker → front door, once warm (device open, sockets bound): it may be assigned a
    session."""
    t: Annotated[Literal["ready"], "the message type"]
    port: Annotated[int, "its ROUTER's tcp port"]
    ipc: Annotated[str | None, "its Unix socket (unix://…) for same-host clients, or None"]
    info: Annotated[DeviceInfo, "its device"]
    runtime: Annotated[RuntimeFacts, "its device's CUDA facts"]
    lease: Annotated[str, "its identity at the arbiter: a random secret, never on a command line"]
    host_memory: NotRequired[Annotated[int, "bytes of memory its host has (its cgroup's limit where lower): the pool's default host budget for swapped sessions is a quarter of it"]]


class ControlUsage(TypedDict):
    """worker → front door, at most every 0.5 s while serving, when a figure changed: the
    session's cumulative usage (the accounting: docs/fair-share.md)."""
    t: Annotated[Literal["usage"], "the message type"]
    memory: Annotated[int, "bytes the session's arrays hold now"]
    arrays: Annotated[int, "arrays the session holds"]
    device_s: Annotated[float, "device seconds measured"]
    ops: Annotated[int, "ops run"]
    bytes_in: Annotated[int, "bytes uploaded"]
    bytes_out: Annotated[int, "bytes downloaded"]
    errors: Annotated[int, "ops that failed"]
    oom: Annotated[int, "of them, ops that ran out of device memory (OutOfMemoryError)"]
    peak: Annotated[int, "the most bytes the session has held"]
    swapped: Annotated[int, "bytes of its arrays swapped out now (worker/swap.py; 0: none)"]
    swapped_host: Annotated[int, "of the bytes swapped out now, those in host memory (the rest are in its swap file)"]
    swapped_arrays: Annotated[int, "of its arrays, how many are swapped out now"]
    swaps_out: Annotated[int, "times it was swapped out"]
    swaps_in: Annotated[int, "times its arrays came back"]
    swap_bytes: Annotated[int, "bytes it has written to swap in all"]
    swap_seconds: Annotated[float, "how long its last swap, out or in, took"]
    waited_s: Annotated[float, "wall seconds its batches waited for the device while other sessions held it"]
    worked_s: Annotated[float, "wall seconds its batches took in the worker, waits included"]
    idle: NotRequired[Annotated[float, "seconds since its last batch, by the worker's clock when it sent this (the pool's idle time and swap choices follow it)"]]


class ControlEnded(TypedDict):
    """worker → front door, as it exits (unless the pool has gone): why, and its last
    figures (those of :class:`ControlUsage` but ``t``; fewer after a device fault)."""
    t: Annotated[Literal["ended"], "the message type"]
    reason: Annotated[str, "why the worker ends (\"closed by the client\", \"stopped by the pool\", a device fault, …)"]
    memory: Annotated[int, "bytes still held before its arrays were freed (0 after a device fault)"]
    arrays: Annotated[int, "arrays the session held"]
    ops: Annotated[int, "ops run"]
    device_s: NotRequired[Annotated[float, "device seconds measured"]]
    bytes_in: NotRequired[Annotated[int, "bytes uploaded"]]
    bytes_out: NotRequired[Annotated[int, "bytes downloaded"]]
    errors: NotRequired[Annotated[int, "ops that failed"]]
    oom: NotRequired[Annotated[int, "of them, ops that ran out of device memory"]]
    peak: NotRequired[Annotated[int, "the most bytes the session held"]]
    waited_s: NotRequired[Annotated[float, "wall seconds its batches waited for the device while other sessions held it"]]
    worked_s: NotRequired[Annotated[float, "wall seconds its batches took in the worker, waits included"]]


class ControlGrow(TypedDict):
    """worker → front door, under a user's memory quota, when an allocation would pass the
    grant: answered with :class:`ControlGranted` (within 10 s, or the allocation fails)."""
    t: Annotated[Literal["grow"], "the message type"]
    want: Annotated[int, "bytes the session needs in all"]


class ControlGrant(TypedDict):
    """worker → front door: memory handed back to the user's quota (idle, or asked by
    :class:`ControlReclaim`, which it always answers so)."""
    t: Annotated[Literal["grant"], "the message type"]
    bytes: Annotated[int | None, "the session's grant now, bytes (None: it has no quota)"]


class ControlAssign(TypedDict):
    """front door → a warm worker: serve this session (before the client's hello is
    answered)."""
    t: Annotated[Literal["assign"], "the message type"]
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user (names diagnostics)"]
    key: Annotated[bytes, "the session key every client message must carry"]
    memory_limit: Annotated[int, "the session's memory limit, bytes"]
    grant: Annotated[int | None, "memory granted under the user's quota, bytes (None: no quota)"]
    grant_step: Annotated[int | None, "bytes asked for (and handed back) at a time under the quota"]
    quota: Annotated[int | None, "the user's memory quota, bytes (None: none)"]
    swap_idle: NotRequired[Annotated[float | None, "seconds idle after which its arrays are swapped out (None: never by itself)"]]
    swap_dir: NotRequired[Annotated[str | None, "the pool's swap directory (0700) for its swap file (None: no swapping)"]]
    device_memory: NotRequired[Annotated[int | None, "the NumPy device's memory shared by its sessions, bytes (None: each has only its own limit; GPU workers ignore it)"]]
    device_turns: NotRequired[Annotated[bool, "the NumPy device's sessions run their ops in turns, as one GPU's do (devices/host_turns.py; GPU workers ignore it)"]]
    adopt: NotRequired[Annotated[str | bytes, "a session moved here: the manifest its last worker parked or lent it in, or its bytes (answered with ControlAdopted)"]]
    adopt_from: NotRequired[Annotated[str, "where its last worker, on another host, streams its arrays from (tcp://host:port)"]]


class QuotaRefusal(TypedDict):
    """A :class:`ControlGranted`'s ``why``: the quota the request met."""
    user: Annotated[str, "the user"]
    quota: Annotated[int, "their memory quota, bytes"]
    others: Annotated[int, "bytes their other sessions hold"]
    sessions: Annotated[int, "how many other sessions they have"]


class ControlGranted(TypedDict):
    """front door → worker: the answer to :class:`ControlGrow` (perhaps after reclaiming
    memory from the user's other sessions)."""
    t: Annotated[Literal["granted"], "the message type"]
    bytes: Annotated[int, "the session's grant now, bytes"]
    why: Annotated[QuotaRefusal | None, "why it is short of want (the OutOfMemoryError's text names it), or None"]


class ControlStop(TypedDict):
    """front door → worker: end (the client closed the session, or the pool stops); the
    worker answers with :class:`ControlEnded` and exits."""
    t: Annotated[Literal["stop"], "the message type"]


class ControlSwap(TypedDict):
    """front door → worker: swap the session's arrays out now (their device memory is
    wanted, or an administrator asked); answered with :class:`ControlSwapped`."""
    t: Annotated[Literal["swap"], "the message type"]
    host: NotRequired[Annotated[int, "bytes of them it may keep in its host's memory (the door's share of the host budget); the rest go to its swap file (absent: all to the file)"]]
    idle: NotRequired[Annotated[float, "asked for another session's memory: the idle seconds its reports showed; a worker whose last batch is more recent stays (ControlSwapped's busy)"]]


class ControlSwapped(TypedDict):
    """worker → front door: the session's arrays went to host memory or its swap file (idle, or asked by
    :class:`ControlSwap`), or could not (``error``: they all stay on the device)."""
    t: Annotated[Literal["swapped"], "the message type"]
    bytes: Annotated[int, "bytes swapped out (0: nothing to swap, or an error)"]
    host: NotRequired[Annotated[int, "of them, bytes in host memory (the rest went to its swap file)"]]
    seconds: Annotated[float, "how long the swap-out took"]
    error: NotRequired[Annotated[str, "why it could not (absent when it did)"]]
    busy: NotRequired[Annotated[float, "asked out as idle (ControlSwap's idle), it stayed: the seconds since its last batch"]]


class ControlSwapDue(TypedDict):
    """worker → front door: its session has been idle for the pool's ``swap_idle``; the door
    answers with :class:`ControlSwap` if its user's swap cap has room (once an idle spell)."""
    t: Annotated[Literal["swap_due"], "the message type"]
    bytes: Annotated[int, "bytes its arrays hold on the device"]


class ControlRoom(TypedDict):
    """worker → front door: an allocation found the device's memory full (not the session's
    quota or limit): swap idle sessions of the device out; answered with
    :class:`ControlRoomed` (within 60 s, or the allocation fails)."""
    t: Annotated[Literal["room"], "the message type"]
    want: Annotated[int, "bytes short (0: unknown)"]


class ControlRoomed(TypedDict):
    """front door → worker: the answer to :class:`ControlRoom`, once the sessions asked to
    swap out have (or their wait is over)."""
    t: Annotated[Literal["roomed"], "the message type"]
    freed: Annotated[int, "bytes the sessions swapped out held (0: none could go)"]


class ControlReclaim(TypedDict):
    """front door → worker: another session of the user wants memory: hand back what is
    not in use (answered with :class:`ControlGrant`)."""
    t: Annotated[Literal["reclaim"], "the message type"]


# ==================================================================== worker zygote

class ZygoteFork(TypedDict):
    """front door → zygote: fork a worker. Three descriptors come with it (``SCM_RIGHTS``):
    the worker's end of its control channel, its stdout, its stderr."""
    t: Annotated[Literal["fork"], "the message type"]
    argv: Annotated[list[str], "the worker's arguments, as after ``python -m gpu_backend.worker`` (not --control-fd)"]
    env: Annotated[dict[str, str], "its environment: the pool's of the moment"]
    cwd: Annotated[str, "its working directory: the pool's of the moment"]


class ZygoteReady(TypedDict):
    """zygote → front door, once its imports are done."""
    t: Annotated[Literal["ready"], "the message type"]
    pid: Annotated[int, "the zygote's process id"]


class ZygoteForked(TypedDict):
    """zygote → front door: the answer to a :class:`ZygoteFork` (answers come in order)."""
    t: Annotated[Literal["forked"], "the message type"]
    pid: Annotated[int | None, "the worker's process id, or None if it could not be forked"]
    error: NotRequired[Annotated[str, "why not"]]


class ZygoteExited(TypedDict):
    """zygote → front door: it has collected a worker that exited."""
    t: Annotated[Literal["exited"], "the message type"]
    pid: Annotated[int, "the worker's process id"]
    code: Annotated[int, "its exit code as ``subprocess`` gives it (negative: the signal)"]


# ==================================================================== arbiter

class ArbiterWant(TypedDict):
    """worker → arbiter: it has work and does not hold the device (again after 1 s without
    a word; from the holder, answered with its grant once more)."""
    t: Annotated[Literal["want"], "the message type"]
    h: NotRequired[Annotated[bool, "``share``: it holds a standing grant, said it was idle and has launched work again (not waited on)"]]


class ArbiterIdle(TypedDict):
    """worker → arbiter, ``share`` only: it holds a standing grant and has run out of work
    (its batch's closing read has begun, or its batch ended)."""
    t: Annotated[Literal["idle"], "the message type"]
    busy: Annotated[float, "cumulative device seconds measured"]
    own: NotRequired[Annotated[float, "of ``busy``, the cumulative device seconds charged at held replays' own costs (worker/replay_prices.py): not scaled by the device's sharing"]]
    op: NotRequired[Annotated[float, "device seconds of one of its ops, as measured lately (a moving average)"]]
    ahead: NotRequired[Annotated[float, "wall seconds its launched work is estimated to run still (beside others; it says ``done`` after)"]]


class ArbiterDone(TypedDict):
    """worker → arbiter, ``share`` only: the work it had launched when it said ``idle`` with
    ``ahead``, or when it gave a standing grant back with ``d``, has run."""
    t: Annotated[Literal["done"], "the message type"]
    busy: Annotated[float, "cumulative device seconds measured"]
    own: NotRequired[Annotated[float, "of ``busy``, the cumulative device seconds charged at held replays' own costs (worker/replay_prices.py): not scaled by the device's sharing"]]


class ArbiterUsed(TypedDict):
    """worker → arbiter, while holding: its measured device time."""
    t: Annotated[Literal["used"], "the message type"]
    busy: Annotated[float, "cumulative device seconds measured"]
    own: NotRequired[Annotated[float, "of ``busy``, the cumulative device seconds charged at held replays' own costs (worker/replay_prices.py): not scaled by the device's sharing"]]
    op: NotRequired[Annotated[float, "device seconds of one of its ops, as measured lately (a moving average)"]]


class ArbiterRelease(TypedDict):
    """worker → arbiter: it hands the device over."""
    t: Annotated[Literal["release"], "the message type"]
    busy: Annotated[float, "cumulative device seconds measured"]
    own: NotRequired[Annotated[float, "of ``busy``, the cumulative device seconds charged at held replays' own costs (worker/replay_prices.py): not scaled by the device's sharing"]]
    want: Annotated[bool, "it still has work (asks again at once)"]
    g: Annotated[int | None, "the grant it hands back"]
    ahead: NotRequired[Annotated[float, "estimated device seconds of work launched and not yet measured (charged until the next report)"]]
    op: NotRequired[Annotated[float, "device seconds of one of its ops, as measured lately (a moving average)"]]
    r: NotRequired[Annotated[bool, "it hands over as its batch's closing read begins, nothing queued behind it: keep the device idle for nobody"]]
    d: NotRequired[Annotated[bool, "``share``: a standing grant given back with work still running: a ``done`` follows when it has run (until then the session shares the device)"]]


class ArbiterGrant(TypedDict):
    """arbiter → worker: it may launch work on the device."""
    t: Annotated[Literal["grant"], "the message type"]
    q: Annotated[float | None, "others wait: hand over after this many device seconds (None: keep it until told)"]
    b: Annotated[bool, "others wait: hand over when the batch ends (fifo)"]
    g: Annotated[int, "the grant's number, which its release names"]
    k: Annotated[int | None, "the worker's slot in the baton file, or None"]
    w: NotRequired[Annotated[list[int], "[slot, grant]: wait until that slot reads that grant's work done before launching"]]
    wt: NotRequired[Annotated[float, "after a preemption: the longest to wait for w, seconds"]]
    a: NotRequired[Annotated[bool, "no other session is attached to the device (a longer queue is allowed)"]]
    s: NotRequired[Annotated[bool, "``share``: a standing grant: launch beside the others until told, say ``idle`` when out of work"]]
    l: NotRequired[Annotated[float, "``share`` with a deep lead: seconds of work this standing holder may launch ahead (absent: its own)"]]


class ArbiterReady(TypedDict):
    """arbiter → worker: it is next; be awake when the grant comes."""
    t: Annotated[Literal["ready"], "the message type"]
    q: Annotated[float, "its grant is due in about this many device seconds"]


class ArbiterCompany(TypedDict):
    """arbiter → every worker on a device, when it goes from one session to more or back;
    under ``share`` with a deep lead, to a worker whose lead changed too."""
    t: Annotated[Literal["company"], "the message type"]
    a: Annotated[bool, "the worker's session is now alone on its device"]
    l: NotRequired[Annotated[float | None, "``share`` with a deep lead: the seconds of work it may launch ahead from now (None: its own)"]]


class ArbiterYield(TypedDict):
    """arbiter → the holder: others wait now (ignored unless ``g`` is the grant held)."""
    t: Annotated[Literal["yield"], "the message type"]
    q: Annotated[float, "hand over after this many more device seconds (0: at once)"]
    b: Annotated[bool, "hand over when the running batch ends"]
    g: Annotated[int, "the grant it concerns"]


# ==================================================================== host agent

class AgentJoin(TypedDict):
    """agent → front door, first: this host's agent (deployed by the pool, which gave it
    *secret*) serves these devices; answered with :class:`AgentWelcome`."""
    t: Annotated[Literal["join"], "the message type"]
    host: Annotated[str, "the host's name in the pool (the name it was deployed under)"]
    secret: Annotated[str, "the secret the pool gave this agent when it deployed it"]
    address: Annotated[str, "where clients reach this host's workers (a host name or IP; IPv6 in brackets)"]
    devices: Annotated[list[str], "its devices as the host names them (cuda:K, cpu:K)"]
    pid: Annotated[int, "the agent's process id"]


class AgentWelcome(TypedDict):
    """front door → agent: the answer to :class:`AgentJoin`."""
    t: Annotated[Literal["welcome", "refused"], "the message type: welcome, or refused"]
    why: NotRequired[Annotated[str, "why it was refused"]]


class AgentLoad(TypedDict):
    """agent → front door, every half second: it is alive, and its arbiter's state."""
    t: Annotated[Literal["load"], "the message type"]
    arbiter: Annotated[dict[str, Any], "per device (the host's names), the arbiter's snapshot ({} under policy none)"]
    workers: Annotated[int, "worker processes it keeps"]


class AgentRelay(TypedDict):
    """agent ↔ front door: a worker control message, to or from worker *w* (agent →
    front door: ``worker``; front door → agent: ``tell``)."""
    t: Annotated[Literal["worker", "tell"], "the message type"]
    w: Annotated[str, "the worker's id"]
    m: Annotated[dict[str, Any], "the control message (a map of the worker control channel)"]


class AgentExited(TypedDict):
    """agent → front door: worker *w*'s process exited (after everything it said)."""
    t: Annotated[Literal["exited"], "the message type"]
    w: Annotated[str, "the worker's id"]
    code: Annotated[int, "its exit code as ``subprocess`` gives it (negative: the signal)"]


class AgentSpawn(TypedDict):
    """front door → agent: start a worker for one of the host's devices (one whose ``ready``
    has not come within the pool's ``ready_timeout`` is ended, ``end``, and replaced)."""
    t: Annotated[Literal["spawn"], "the message type"]
    w: Annotated[str, "the worker's id, chosen by the front door"]
    device: Annotated[str, "the device as the host names it"]


class AgentWorkerEnd(TypedDict):
    """front door → agent: end worker *w* (``end``: tell it to stop, then kill it;
    ``kill``: kill it)."""
    t: Annotated[Literal["end", "kill"], "the message type"]
    w: Annotated[str, "the worker's id"]


class AgentAttach(TypedDict):
    """front door → agent: the host's arbiter is to know that a worker serves a session."""
    t: Annotated[Literal["attach"], "the message type"]
    lease: Annotated[str, "the worker's lease id (its ready's lease)"]
    device: Annotated[str, "the device as the host names it"]
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    weight: Annotated[float, "the user's weight"]


class AgentDetach(TypedDict):
    """front door → agent: a worker's session ended, for the host's arbiter."""
    t: Annotated[Literal["detach"], "the message type"]
    lease: Annotated[str, "the worker's lease id"]


class AgentWeights(TypedDict):
    """front door → agent: the users' weights changed (a users-file reload)."""
    t: Annotated[Literal["weights"], "the message type"]
    weights: Annotated[dict[str, float], "every user's weight"]


class AgentLeave(TypedDict):
    """agent → front door, as it ends of its own accord (stopped on its host, or its
    loop failed): the front door drops the host at once."""
    t: Annotated[Literal["leave"], "the message type"]
    why: Annotated[str, "why it ends"]


class AgentStop(TypedDict):
    """front door → agent: the pool stops, or has dropped this host: end every worker and
    leave."""
    t: Annotated[Literal["stop"], "the message type"]


# ==================================================================== front door
class WhereRequest(TypedDict):
    """client → front door, when the link to its worker ended or its heartbeat said the
    session moved (kernelproxy/relink.py): where is the session's worker now? Answered once
    a move under way is done."""
    t: Annotated[Literal["where"], "the message type"]
    session: Annotated[str, "the session's id"]
    key: Annotated[bytes, "the session key"]


class WhereReply(TypedDict):
    """front door → client: the session's worker (as in a hello's reply), how often the
    session has moved, and the last batch its previous worker ran (later ones are sent
    again to this worker)."""
    ok: Annotated[Literal[True], "the request succeeded"]
    worker_port: Annotated[int, "the worker's tcp port"]
    worker_host: NotRequired[Annotated[str, "the worker's host, in a pool across hosts"]]
    worker_ipc: Annotated[str | None, "the worker's Unix socket (unix://…), or None"]
    device: Annotated[DeviceInfo, "the worker's device"]
    runtime: Annotated[RuntimeFacts, "the device's CUDA facts"]
    moves: Annotated[int, "how often the session has moved (the same as the client's: it did not)"]
    ran: Annotated[int, "the last batch the session's previous worker ran (0: none, or it never moved)"]
    refused: Annotated[str | None, "why the last move asked of it did not happen, or None"]


# ==================================================================== worker control
class ControlPark(TypedDict):
    """front door → worker: park the session for another worker (a move, a drain): at its
    loop, between batches, write the arrays, held stretches and last batch to a directory
    and exit; answered with :class:`ControlParked`."""
    t: Annotated[Literal["park"], "the message type"]
    dir: Annotated[str | None, "the directory to park in (None: the session's swap directory)"]
    lend: NotRequired[Annotated[bool, "lend the arrays where the device can (CUDA IPC within the host; streamed with ``stream``) and wait for ControlRelease, instead of writing them out"]]
    stream: NotRequired[Annotated[bool, "the adopter is on another host: stream the arrays to it from a port of this host"]]
    files: NotRequired[Annotated[bool, "whether they may go through the swap directory instead (False: the other host does not mount it)"]]


class ControlUnpark(TypedDict):
    """front door → worker: the move asked by :class:`ControlPark` is given up (its worker
    did not park in time, busy with a long batch; a lent session's adopter failed): the
    session stays."""
    t: Annotated[Literal["unpark"], "the message type"]


class ControlElsewhere(TypedDict):
    """worker → front door: the session's arrays do not fit its device, full of sessions
    that cannot be swapped out (its swap-in asked for room and got none): move it to a
    device with room, answered with ``park`` (its waiting batch is then left unanswered:
    the client sends it again to the next worker) or :class:`ControlStay`."""
    t: Annotated[Literal["elsewhere"], "the message type"]
    want: Annotated[int, "bytes of its arrays"]


class ControlStay(TypedDict):
    """front door → worker: no device has room for the session (:class:`ControlElsewhere`):
    it stays, and its batch fails with the device's out-of-memory error."""
    t: Annotated[Literal["stay"], "the message type"]


class ControlRelease(TypedDict):
    """front door → a worker that lent its session (:class:`ControlParked` ``lent``): the
    adopter has copied the arrays; free them and exit."""
    t: Annotated[Literal["release"], "the message type"]


class ControlParked(TypedDict):
    """worker → front door: the session is parked (the worker then exits), or could not be
    (``error``: it stays, nothing lost)."""
    t: Annotated[Literal["parked"], "the message type"]
    manifest: NotRequired[Annotated[str | bytes, "the parked session's manifest (0600, msgpack), for the adopting worker; its bytes where it streams the arrays"]]
    bytes: NotRequired[Annotated[int, "bytes of arrays parked"]]
    batch: NotRequired[Annotated[int, "the last batch it ran"]]
    lent: NotRequired[Annotated[bool, "the arrays stayed in this worker's device memory, lent (it waits for ControlRelease or ControlUnpark)"]]
    port: NotRequired[Annotated[int, "the port of this host it streams them from (a move to another host)"]]
    error: NotRequired[Annotated[str, "why it could not park (a remote object it holds, a full disk)"]]


class ControlAdopted(TypedDict):
    """worker → front door, after an :class:`~messages.ControlAssign` with ``adopt``: it has
    the moved session (its arrays come back at its first batch), or could not take it."""
    t: Annotated[Literal["adopted"], "the message type"]
    bytes: NotRequired[Annotated[int, "bytes of arrays adopted"]]
    error: NotRequired[Annotated[str, "why not (the session then ends, saying so)"]]


# ==================================================================== administration
class AdminDrain(TypedDict):
    """the pool's OS user → the administration socket (``gpuwb-backend drain``): place no
    new session on these devices and move every session there elsewhere."""
    t: Annotated[Literal["drain"], "the message type"]
    devices: Annotated[list[str], "the pool's device names (cuda:0, cpu:1)"]


class AdminUndrain(TypedDict):
    """the pool's OS user → the administration socket: place sessions there again."""
    t: Annotated[Literal["undrain"], "the message type"]
    devices: Annotated[list[str], "the pool's device names"]


class AdminMove(TypedDict):
    """the pool's OS user → the administration socket (``gpuwb-backend move``)."""
    t: Annotated[Literal["move"], "the message type"]
    session: Annotated[str, "the session's id"]
    device: Annotated[str, "the device to move it to"]


class AdminMoves(TypedDict):
    """the pool's OS user → the administration socket: where every session is."""
    t: Annotated[Literal["moves"], "the message type"]


class AdminRestart(TypedDict):
    """the pool's OS user → the administration socket (``gpuwb-backend restart``): park
    every session in the swap directory and stop; ``gpuwb-backend serve`` starts again."""
    t: Annotated[Literal["restart"], "the message type"]


class ParkedSession(TypedDict):
    """A :class:`ParkedSessions` record: one session parked for the next pool."""
    session: Annotated[str, "the session's id (the client asks where it is by it)"]
    key: Annotated[bytes, "the session key (the file is 0600 in a 0700 folder)"]
    user: Annotated[str, "its user (a user no longer in the users file loses it)"]
    client: Annotated[str, "the client's label for itself"]
    label: Annotated[str, "what opened it"]
    memory_limit: Annotated[int, "its memory limit, bytes"]
    grant: Annotated[int | None, "its grant under the user's quota (None: no quota)"]
    device: Annotated[str, "the device it was on (taken again where the next pool has it)"]
    manifest: Annotated[str, "its worker's manifest (worker/handover.py)"]
    ran: Annotated[int, "the last batch its worker ran"]
    moves: Annotated[int, "how often it had moved"]


class ParkedSessions(TypedDict):
    """What a pool stopped with SIGTERM leaves for the next (``restart/sessions.msgpack``
    in its swap directory, 0600; door/restarts.py)."""
    v: Annotated[Literal[1], "the records' version"]
    sessions: Annotated[list[ParkedSession], "one record per parked session"]


class AdminMoveRow(TypedDict):
    """An :class:`AdminReply`'s ``moves`` row: one session a drain moves, or why it stays."""
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    device: Annotated[str, "the device it is on"]
    to: NotRequired[Annotated[str, "where it goes"]]
    error: NotRequired[Annotated[str, "why it stays"]]


class AdminSessionRow(TypedDict):
    """An :class:`AdminReply`'s ``sessions`` row."""
    session: Annotated[str, "the session's id"]
    user: Annotated[str, "its user"]
    device: Annotated[str, "the device whose worker serves it (until a move is done: the old one)"]
    moving: Annotated[str | None, "the device it is moving to, or None"]
    moves: Annotated[int, "how often it has moved"]
    how: Annotated[str | None, "how its last move went: lent (device to device, within a host) or files (through the swap directory); None: it never moved"]
    refused: Annotated[str | None, "why its last move did not happen, or None"]


class AdminReply(TypedDict):
    """administration socket → the pool's OS user: the answer to any request."""
    ok: Annotated[bool, "whether it was done (False: ``error`` says why)"]
    error: NotRequired[Annotated[str, "why not"]]
    moves: NotRequired[Annotated[list[AdminMoveRow], "a drain's moves"]]
    draining: NotRequired[Annotated[list[str], "the devices being drained now"]]
    sessions: NotRequired[Annotated[list[AdminSessionRow], "every open session (``moves``)"]]
    open: NotRequired[Annotated[int, "the sessions open, to be parked (``restart``)"]]


# ==================================================================== the registry

FRONT_DOOR = "front door"
POOL_STATUS = "pool status"
SESSION_WORKER = "session worker"
WORKER_CONTROL = "worker control"
ARBITER = "arbiter"
WORKER_ZYGOTE = "worker zygote"
HOST_AGENT = "host agent"
DEVICE_FACTS = "device facts"
ADMINISTRATION = "administration"

#: Each channel: who talks over what.
CHANNELS: dict[str, str] = {
    FRONT_DOOR: "Client DEALER → the pool's ROUTER (tcp://, or the same-host ipc:// door): one "
                "msgpack map a frame each way. A request names its type in `t`; every reply "
                "has `ok`.",
    POOL_STATUS: "The rows and parts of a `StatusReply` (also `LocalPool.door.status()`, the "
                 "metrics and the Jupyter server extension's JSON).",
    SESSION_WORKER: "Client DEALER → the session's worker ROUTER, or the same-host Unix link. "
                    "The map is the first msgpack object of a message's first frame; a batch's "
                    "op records follow it there, and array payloads in the next frames.",
    WORKER_CONTROL: "A worker ↔ the front door, over the socket pair the worker inherits "
                    "(`--control-fd`): one msgpack map per record, at most 1 MiB. Its closing "
                    "is news to both sides.",
    WORKER_ZYGOTE: "The front door ↔ a zygote that forks its workers, over the socket pair "
                   "the zygote inherits (`--fd`): one msgpack map per record, descriptors "
                   "alongside a `fork`. Its closing ends the zygote.",
    HOST_AGENT: "A host agent's DEALER → the front door's agents ROUTER (a multi-host pool, "
                "docs/cluster.md; CurveZMQ with the pool's key where it has one): one msgpack map "
                "a frame each way. The agent relays its workers' control channels, tagged by "
                "worker id. Nothing is resent: a message that cannot be sent, or a "
                "connection that breaks, ends the agent and loses its host (docs/cluster.md, "
                "\"Messages lost\").",
    ARBITER: "A worker's DEALER ↔ the pool's arbiter thread (`ipc://` in the pool's run "
             "directory; the worker's identity is its `lease` secret), under the `fair` and "
             "`fifo` policies (docs/fair-share.md).",
    DEVICE_FACTS: "Maps that travel inside other messages, or as an op's value in a reply's `v`.",
    ADMINISTRATION: "The pool's OS user's DEALER → the administration socket, `ipc://` `admin` "
                    "in the pool's same-host directory, mode 0600 (`gpuwb-backend drain`; "
                    "gpu_backend/door/admin.py): one msgpack map a frame each way. Also the "
                    "records a pool stopped with SIGTERM leaves its successor "
                    "(`restart/sessions.msgpack` in the swap directory, door/restarts.py).",
}

#: Every message's class, by channel (the order of docs/protocol.md).
MESSAGES: dict[str, tuple[type, ...]] = {
    FRONT_DOOR: (HelloRequest, HelloReply, HeartbeatRequest, HeartbeatReply, StatusRequest,
                 StatusReply, CloseRequest, CloseReply, EndRequest, EndReply, PingRequest,
                 PingReply, WhereRequest, WhereReply, ErrorReply),
    POOL_STATUS: (StatusDevice, StatusHost, StatusUser, StatusAccount, StatusSession, EndedSession, StatusSpin,
                  ShareHistory, DeviceSamples),
    SESSION_WORKER: (BatchHeader, CancelRequest, WorkerCloseRequest, StagingRequest, LinkAuth,
                     UploadChunk, BatchReply, ClosedReply, StagingReply, StagingOffer,
                     StagedDownloadChunk, WaitNotice),
    WORKER_CONTROL: (ControlReady, ControlUsage, ControlEnded, ControlGrow, ControlGrant,
                     ControlAssign, ControlGranted, QuotaRefusal, ControlStop, ControlReclaim,
                     ControlSwap, ControlSwapped, ControlSwapDue, ControlRoom, ControlRoomed,
                     ControlPark, ControlUnpark, ControlRelease, ControlParked,
                     ControlAdopted, ControlElsewhere, ControlStay),
    WORKER_ZYGOTE: (ZygoteFork, ZygoteReady, ZygoteForked, ZygoteExited),
    HOST_AGENT: (AgentJoin, AgentWelcome, AgentLoad, AgentRelay, AgentExited, AgentSpawn,
                 AgentWorkerEnd, AgentAttach, AgentDetach, AgentWeights, AgentLeave, AgentStop),
    ARBITER: (ArbiterWant, ArbiterIdle, ArbiterDone, ArbiterUsed, ArbiterRelease, ArbiterGrant, ArbiterReady, ArbiterCompany,
              ArbiterYield),
    DEVICE_FACTS: (DeviceInfo, RuntimeFacts, Accelerators, StretchFigures, GraphFigures, SplitFigures,
                   SessionFigures, PoolFigures),
    ADMINISTRATION: (AdminDrain, AdminUndrain, AdminMove, AdminMoves, AdminRestart, AdminReply,
                     AdminMoveRow, AdminSessionRow, ParkedSessions, ParkedSession),
}

def fields_of(cls: type) -> dict[str, tuple[Any, str, bool]]:
    """A message class's fields: name -> (type, meaning, required), in declaration order."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {}
    for name, hint in hints.items():
        meaning = ""
        while True:   # peel NotRequired/Required and Annotated, in either order
            origin = typing.get_origin(hint)
            if origin is Annotated:
                meaning = next((m for m in hint.__metadata__ if isinstance(m, str)), meaning)
                hint = hint.__origin__
            elif origin in (typing.Required, typing.NotRequired):
                hint = typing.get_args(hint)[0]
            else:
                break
        fields[name] = (hint, meaning, name in cls.__required_keys__)
    return fields
