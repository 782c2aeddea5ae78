"""What a user sees of an error the pool raised: their own lines, not the client's.

An op's error (CuPy's ``OutOfMemoryError``, a ``ValueError`` of a shape, a lost session)
reaches the user's line through a dozen of kernelproxy's frames: the proxy method, the
issue path, ``Session.value``, ``sync``, ``_raise_pending``. Python prints all of them
before the message, and IPython, which hides frames marked ``__tracebackhide__``, still
shows the last one, the ``raise`` in ``session.py``. The user's line was lost among ours.

:func:`for_user` marks such an exception as it is raised. Where it is shown, frames of
this package and of the protocol are left out, so the traceback is the user's own lines
(most often one), then the message and the note naming the op and the line that issued
it:

- under IPython (the Jupyter kernel, terminal IPython), through the exception's
  ``_render_traceback_``, which ``InteractiveShell.showtraceback`` asks an exception
  for before formatting it itself: the same formatter, given the user's frames;
- in a plain script, through ``sys.excepthook``, which the first marked exception
  wraps (once per process): the previous hook prints the exception with the user's
  frames. Exceptions not marked, a bug of ours included, keep every frame.

An exception caught and printed by the program itself (``traceback.print_exc``) keeps
every frame: only what reaches the top is trimmed.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any, TypeVar

import gpu_backend.protocol

__all__ = ["for_user", "user_traceback"]

E = TypeVar("E", bound=BaseException)

#: Where our frames' code lives: this package, and the protocol it encodes ops with.
_OURS = tuple(os.path.dirname(os.path.abspath(module.__file__)) + os.sep
              for module in (sys.modules[__package__], gpu_backend.protocol))
_hook_installed = False


def user_traceback(tb: TracebackType | None) -> TracebackType | None:
    """*tb* without the frames of kernelproxy and the protocol (a new chain; *tb* is
    left as it is); None when every frame was ours."""
    kept = []
    while tb is not None:
        if not os.path.normpath(tb.tb_frame.f_code.co_filename).startswith(_OURS):   # (".." too)
            kept.append(tb)
        tb = tb.tb_next
    trimmed = None
    for entry in reversed(kept):
        trimmed = TracebackType(trimmed, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return trimmed


class _UserFrames:
    """An exception's ``_render_traceback_`` for IPython: its structured traceback from
    the shell's own formatter, over the user's frames only. Never raises (IPython would
    say it could not format the exception): it falls back to every frame."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __call__(self) -> list[str]:
        exc = self.exc
        shell = _ipython()
        formatter = getattr(shell, "InteractiveTB", None)
        # the traceback the shell was given (showtraceback leaves it in sys.last_traceback):
        # the Jupyter kernel gives none for an error of its end-of-cell sync, all ours
        tb = sys.last_traceback if getattr(sys, "last_value", None) is exc else exc.__traceback__
        try:
            return formatter.structured_traceback(type(exc), exc, user_traceback(tb))
        except Exception:   # (no shell after all, or a formatter of another make)
            import traceback
            return traceback.format_exception(type(exc), exc, exc.__traceback__)


def _ipython() -> Any:
    """The running IPython shell (asked only when IPython renders: it is imported then)."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def for_user(exc: E) -> E:
    """Mark *exc*, about to be raised to the user's code, to be shown with the user's
    frames only; returns it (``raise for_user(exc)``)."""
    exc._render_traceback_ = _UserFrames(exc)   # (IPython looks on the instance)
    if not _hook_installed:
        _install_excepthook()
    return exc


def _install_excepthook() -> None:
    """Wrap ``sys.excepthook`` once: a marked exception that ends the program is printed
    by the previous hook with the user's frames only, as are marked ones in its chain."""
    global _hook_installed
    _hook_installed = True
    previous = sys.excepthook

    def excepthook(kind: type[BaseException], value: BaseException,
                   tb: TracebackType | None) -> None:
        # (Python's own hook prints the exception's __traceback__, not *tb*, and those of
        # the exceptions chained to it)
        if isinstance(getattr(value, "_render_traceback_", None), _UserFrames):
            tb = value.__traceback__ = user_traceback(tb)
        seen, link = {id(value)}, value.__cause__ or value.__context__
        while link is not None and id(link) not in seen:
            seen.add(id(link))
            if isinstance(getattr(link, "_render_traceback_", None), _UserFrames):
                link.__traceback__ = user_traceback(link.__traceback__)
            link = link.__cause__ or link.__context__
        previous(kind, value, tb)

    sys.excepthook = excepthook
