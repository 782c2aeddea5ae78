"""The protocol's version, the kinds and flags of a batch's op records (lists, not maps:
docs/protocol.md describes them), the size from which uploads and downloads stream in
chunks, and the version of a wait notice."""

__all__ = ["PROTOCOL_VERSION", "KIND_FUNCTION", "KIND_METHOD", "KIND_OPERATOR", "KIND_ATTRIBUTE",
           "KIND_UPLOAD", "KIND_INFO", "KIND_KERNEL", "KIND_DOWNLOAD", "KIND_CUDA", "KIND_OBJECT",
           "FLAG_C", "FLAG_F", "FLAG_OWN", "STREAM_CHUNK_BYTES", "WAIT_NOTICE_VERSION"]

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
