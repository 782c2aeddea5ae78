"""The shape of every message, in one package: a module per channel.

Every control message is a msgpack map. Each map's keys are declared in this package, one
``TypedDict`` per message, in the module of its channel (``front_door``,
``session_worker``, ``worker_control``, ``worker_zygote``, ``arbiter``, ``host_agent``,
``administration``; the maps they carry in ``device_facts`` and ``pool_status``), and
grouped by channel in :data:`MESSAGES` here; each field is ``Annotated[type, "what it
means"]``, and each class's docstring says who sends it to whom and when. Every name is
taken from here (``messages.BatchHeader``), not from the modules. The tables of
docs/protocol.md ("Messages, field by field") are rendered from them by
:mod:`gpu_backend.protocol.message_docs` (``python -m gpu_backend.protocol --write
docs/protocol.md`` rewrites them), and tests/gpu_backend/test_wire_schema.py holds the
code's literals and the page to these classes. They describe; nothing validates messages
against them at run time. The op records that follow a batch's header are lists, not
maps: docs/protocol.md describes them, and the ``KIND_*`` constants (``kinds``) name them.

Payload frames are raw array bytes, one frame per array, sent and received
without a copy (``copy=False``; the receiver wraps the frame's own memory with
``numpy.frombuffer``). ZeroMQ delivers a multipart message only when all of it
has arrived, so splitting an array into several frames would pipeline nothing
and would force the receiver to reassemble it: one frame is both simpler and
faster (see docs/protocol.md).

The package imports nothing but the standard library (tests/gpu_backend/test_wire_schema.py
loads it alone).
"""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

import typing
from typing import Annotated, Any

from .kinds import (PROTOCOL_VERSION, KIND_FUNCTION, KIND_METHOD, KIND_OPERATOR, KIND_ATTRIBUTE,
                    KIND_UPLOAD, KIND_INFO, KIND_KERNEL, KIND_DOWNLOAD, KIND_CUDA, KIND_OBJECT,
                    FLAG_C, FLAG_F, FLAG_OWN, STREAM_CHUNK_BYTES, WAIT_NOTICE_VERSION)
from .device_facts import *  # noqa: F401,F403
from .pool_status import *  # noqa: F401,F403
from .front_door import *  # noqa: F401,F403
from .session_worker import *  # noqa: F401,F403
from .worker_control import *  # noqa: F401,F403
from .worker_zygote import *  # noqa: F401,F403
from .arbiter import *  # noqa: F401,F403
from .host_agent import *  # noqa: F401,F403
from .administration import *  # noqa: F401,F403

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
