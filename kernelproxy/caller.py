"""The user's line that issued an op: the innermost frame outside kernelproxy.

Every op records it (errors name it: "raised by cupy.exp, issued at line 3 of cell [5]"),
so the lookup is on every op's path: one dict lookup per frame, keyed by code object,
rather than a string test of each frame's file name.
"""

from __future__ import annotations

import os
import sys

__all__ = ["caller"]

_HERE = os.path.dirname(os.path.abspath(__file__))
#: code object -> whether it is kernelproxy's own
_OWN_CODE: dict = {}


def caller(depth: int = 2) -> tuple[str, int]:
    """(file, line) of the innermost frame outside kernelproxy, starting *depth* frames up
    (2: the caller of the function that calls this)."""
    frame = sys._getframe(depth)
    own_code = _OWN_CODE
    while frame is not None:
        code = frame.f_code
        own = own_code.get(code)
        if own is None:
            if len(own_code) > 4096:   # notebooks make new code objects per cell: stay small
                own_code.clear()
            own = own_code[code] = code.co_filename.startswith(_HERE)
        if not own:
            break
        frame = frame.f_back
    if frame is None:
        return ("<unknown>", 0)
    return (frame.f_code.co_filename, frame.f_lineno)
