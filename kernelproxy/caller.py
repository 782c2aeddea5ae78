"""The user's line that issued an op: the innermost frame outside kernelproxy.

Every op records it (errors name it: "raised by cupy.exp, issued at line 3 of cell [5]"),
so the lookup is on every op's path: one dict lookup per frame, keyed by code object,
rather than a string test of each frame's file name.
"""

from __future__ import annotations

import os
import sys

__all__ = ["caller", "call_site", "site_line"]

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: id(code object) -> (the code object, whether it is kernelproxy's own). By id: a code
#: object's hash is worked out from its whole contents at each lookup (most of a lookup's
#: time); the object kept beside it tells a reused id from the one classified
_OWN_CODE: dict = {}


def _user_frame(frame):
    """The innermost frame from *frame* outward that is not kernelproxy's (None: none)."""
    while frame is not None:
        code = frame.f_code
        entry = _OWN_CODE.get(id(code))
        if entry is None or entry[0] is not code:
            if not _own(code):
                return frame
        elif not entry[1]:
            return frame
        frame = frame.f_back
    return None


def caller(depth: int = 2) -> tuple[str, int]:
    """(file, line) of the innermost frame outside kernelproxy, starting *depth* frames up
    (2: the caller of the function that calls this)."""
    frame = _user_frame(sys._getframe(depth))
    if frame is None:
        return ("<unknown>", 0)
    return (frame.f_code.co_filename, frame.f_lineno)


def call_site(depth: int = 2) -> tuple:
    """The same frame as :func:`caller`, kept as (code, instruction offset): cheaper to take
    than its line, which :func:`site_line` works out only when asked (a held stretch's fast
    path takes one an op and needs a line only for an error or a warning)."""
    frame = _user_frame(sys._getframe(depth))
    return (None, 0) if frame is None else (frame.f_code, frame.f_lasti)


def _own(code) -> bool:
    """Whether *code* is kernelproxy's own (remembered by id, with the code itself)."""
    entry = _OWN_CODE.get(id(code))
    if entry is not None and entry[0] is code:
        return entry[1]
    if len(_OWN_CODE) > 4096:   # notebooks make new code objects per cell: stay small
        _OWN_CODE.clear()
    # (normalised: a package imported through a path with ".." — a script's
    # ``sys.path.insert(0, join(dirname(__file__), ".."))`` — has such file names)
    own = os.path.normpath(code.co_filename).startswith(_HERE)
    _OWN_CODE[id(code)] = (code, own)
    return own


def site_line(site: tuple) -> tuple[str, int]:
    """(file, line) of a :func:`call_site`."""
    code, offset = site
    if code is None:
        return ("<unknown>", 0)
    line = code.co_firstlineno
    for start, end, number in code.co_lines():
        if start <= offset < end:
            line = number if number is not None else line
            break
    return (code.co_filename, line)
