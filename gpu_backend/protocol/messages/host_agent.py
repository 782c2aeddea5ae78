"""A host agent ↔ the front door, in a pool across hosts (docs/cluster.md). One ``TypedDict``
per message; the package's docstring (``__init__``) says how they are read and rendered, and
every name is taken from the package."""

# (no ``from __future__ import annotations``: Python 3.11's TypedDict reads Required and
# NotRequired only from annotations that are objects, not strings)

from typing import Annotated, Any, Literal, NotRequired, TypedDict

__all__ = ["AgentJoin", "AgentWelcome", "AgentLoad", "AgentRelay", "AgentExited", "AgentSpawn",
           "AgentWorkerEnd", "AgentAttach", "AgentDetach", "AgentWeights", "AgentLeave", "AgentStop"]


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
