"""The front door ↔ a zygote that forks its workers. One ``TypedDict`` per message; the
package's docstring (``__init__``) says how they are read and rendered, and every name is
taken from the package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, Literal, NotRequired, TypedDict

__all__ = ["ZygoteFork", "ZygoteReady", "ZygoteForked", "ZygoteExited"]


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
