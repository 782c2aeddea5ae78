"""A client ↔ its session's worker: a batch's header and reply, uploads and downloads in
chunks, staging, cancels and notices. One ``TypedDict`` per message; the package's docstring
(``__init__``) says how they are read and rendered, and every name is taken from the
package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, Any, Literal, NotRequired, TypedDict

__all__ = ["BatchHeader", "CancelRequest", "WorkerCloseRequest", "StagingRequest", "LinkAuth",
           "UploadChunk", "BatchReply", "ClosedReply", "StagingOffer", "StagingReply",
           "StagedDownloadChunk", "WaitNotice"]


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
