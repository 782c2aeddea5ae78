"""What an op's error says to the client: the exception's own text, what an out-of-memory
error says was asked, and the refusal of a name the device lacks or the pool does not allow.
"""

from __future__ import annotations

import re
from typing import Any

from ..protocol.errors import NotAllowedError

__all__ = ["message_of", "asked_of", "refusal"]


def message_of(exc: BaseException) -> str:
    """The exception's text (a KeyError's key without its quotes)."""
    text = str(exc)
    if isinstance(exc, KeyError) and len(exc.args) == 1 and text.startswith("'"):
        text = str(exc.args[0])
    return text


_ASKED = re.compile(r"Out of memory allocating [0-9,]+ bytes")


def asked_of(text: str) -> str:
    """What an out-of-memory error says was asked (CuPy's text goes on with the pool's
    figures, which the budget explanation replaces), or the whole text."""
    found = _ASKED.match(text)
    return found.group(0) if found else text.rstrip(".")


def refusal(what: str, name: Any, allowed: dict, device_kind: str) -> Exception:
    """An allow-listed name this device lacks, or a name the pool does not allow."""
    if type(name) is str and name in allowed:
        return NotImplementedError(f"{what} {name!r} is not available on the {device_kind} device")
    return NotAllowedError(f"{what} {name!r} is not on the pool's allow-list")
