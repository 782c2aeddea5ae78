"""The shape of every message, in one place.

Front door (one msgpack frame each way)::

    client -> {"t": "hello", "v": VERSION, "token": str, "user": str, "memory_limit": int|None}
           <- {"ok": True, "session": str, "key": bytes, "worker_port": int,
               "worker_ipc": str|None (the worker's unix:// socket, for clients of the ipc:// door),
               "device": {...}, "runtime": {properties, attributes, versions},
               "lease_timeout": float, "memory_limit": int}
    client -> {"t": "hb", "session": str, "key": bytes}        <- {"ok": True, "alive": bool}
    client -> {"t": "status", "token": str}                    <- {"ok": True, "devices": [...], ...}
    client -> {"t": "close", "session": str, "key": bytes}     <- {"ok": True}
    client -> {"t": "ping"}                                    <- {"ok": True, "v": VERSION}
    any error                                                  <- {"ok": False, "error": [name, text]}

Session worker (multipart)::

    client -> [header + ops, payload...]    (the header is the frame's first msgpack object)
        header = {"k": key, "b": batch, "n": op count, "r": resume seq|None,
                  "y": wait for the device to finish before replying,
                  "g": time the batch's device work (CUDA events; reply field "g", seconds)}
        ops    = records, msgpack objects back to back, decoded one by one in order:
                 an op is two objects, [seq, kind, want, out, name] then [target, args, kwargs];
                 a bare integer frees that handle (the client dropped the array at that point,
                 so memory is reused exactly as it would be locally)
    worker -> [reply, payload...]
        reply  = {"b": batch, "m": [[id, shape, dtype, strides, flags]], "v": [[seq, value]],
                  "d": [[seq, dtype, shape]], "e": [seq, class, text, op]|None,
                  "w": [[seq, category, text]], "x": executed, "s": skipped,
                  "t": seconds the worker spent on the batch}

Payload frames are raw array bytes, one frame per array, sent and received
without a copy (``copy=False``; the receiver wraps the frame's own memory with
``numpy.frombuffer``). ZeroMQ delivers a multipart message only when all of it
has arrived, so splitting an array into several frames would pipeline nothing
and would force the receiver to reassemble it: one frame is both simpler and
faster (see docs/protocol.md).

Worker control (worker DEALER -> front-door ROUTER, one msgpack frame each way)::

    worker -> {"t": "ready", "port": int}  |  {"t": "usage", ...}  |  {"t": "ended", "reason": str}
    door   -> {"t": "assign", "session": str, "key": bytes, "memory_limit": int}  |  {"t": "stop"}
"""

from __future__ import annotations

__all__ = [
    "PROTOCOL_VERSION", "KIND_FUNCTION", "KIND_METHOD", "KIND_OPERATOR",
    "KIND_ATTRIBUTE", "KIND_UPLOAD", "KIND_INFO", "KIND_KERNEL", "STREAM_CHUNK_BYTES", "KIND_DOWNLOAD", "KIND_CUDA", "KIND_OBJECT", "FLAG_C", "FLAG_F", "FLAG_OWN",
]

#: Bumped whenever a message changes shape; the front door refuses other versions.
PROTOCOL_VERSION = 1

KIND_FUNCTION = "f"    # target None, name from api.FUNCTIONS
KIND_METHOD = "m"      # target = handle, name from api.METHODS
KIND_OPERATOR = "o"    # name from api.OPERATORS, args = operands
KIND_ATTRIBUTE = "a"   # target = handle, name from api.ATTRIBUTES
KIND_UPLOAD = "u"      # name = dtype, args = [shape] (data: next payload frame)
                       # or [shape, chunks] (data: that many chunk messages follow)
KIND_INFO = "i"        # the session's memory and device figures, as a value
KIND_KERNEL = "k"      # name = "elementwise" | "raw", target = the definition map, args = call args
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
