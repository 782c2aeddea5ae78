"""Which session a user may end by their token alone (the front door's ``end`` request).

A session is closed by its client, which holds the session key (``close``). The Lab
panel lists a user's sessions so that they can end the notebook they forgot, whose key
only that notebook's kernel holds; the Jupyter server extension asks with the user's
token instead (``EndRequest``). The token proves who the user is, so the rule is
simple and strict: a user may end their own open sessions and nobody else's, whatever
else they know (session ids are in every status).
"""

from __future__ import annotations

from typing import Any

from gpu_backend.protocol.errors import NotAllowedError, ProtocolError

__all__ = ["own_session"]


def own_session(sessions: dict[str, Any], sid: object, user: str) -> Any | None:
    """The open session *sid* of *user*, or None when no open session has that id (it has
    ended, or its client is closing it). Raises NotAllowedError when it is another
    user's, ProtocolError when *sid* is not a session id."""
    if type(sid) is not str or not 0 < len(sid) <= 64:
        raise ProtocolError("an end request's session is a session id")
    session = sessions.get(sid)
    if session is None or session.closing:
        return None
    if session.user != user:
        raise NotAllowedError(f"session {sid} is not yours: a user may end only their own sessions")
    return session
