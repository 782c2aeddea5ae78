"""The held op's compiled accelerator: a remote array's arithmetic and comparison operators
and its ``__del__`` in C (``kernelproxy/_held_ops.c``), for the op a held stretch's
template answers.

Why: inside a held stretch the client only checks each op against the template and hands
out an array whose metadata the template gives (``TemplateRun.operator``, the reference).
In Python that is ~2 µs an op on the development VM and 4–6 µs on the GPU hosts, where
local CuPy's whole op costs 12–18 µs: the client set the pace of a replayed loop
(docs/stretch-replay.md). The C methods do the same steps on the same objects and hand
everything else (no run, another operand type, a subclass, a template's miss) to the
Python methods they wrap, which stay the tested path.

The extension is built by ``pip install`` where a C compiler is found (``hatch_build.py``);
without it :data:`AVAILABLE` is False and the Python methods serve alone. A session turns
it off with ``GPUWB_COMPILED=0`` (``SessionSettings.compiled``): its runs are then checked
by the Python methods only, to measure the difference and as a way out.
"""

from __future__ import annotations

from typing import Any, Callable

try:
    from . import _held_ops
except ImportError:   # no compiler at install: the Python methods alone
    _held_ops = None

__all__ = ["AVAILABLE", "accelerate", "start", "call_site", "run_class"]

#: whether the compiled accelerator was built and loads
AVAILABLE = _held_ops is not None
#: ``start(run, session, name, a, b, label)``: a held stretch's first op, an operator, checked
#: against the template of *run*, a run its session is about to start
#: (``Session._start_operator``, called by the C operator where the session has no run): the
#: result array, or None where the template's first op is not this one (None: not built)
start = _held_ops.start if _held_ops is not None else None
#: ``call_site()``: ``caller.call_site`` of the running Python frame, in C (None: not built)
call_site = _held_ops.call_site if _held_ops is not None else None


def accelerate(cls: type, binaries: list[tuple[str, str, str, bool, Callable]],
               configure: tuple[Any, ...]) -> None:
    """Put the C methods on *cls* (the remote array class) over its Python ones:
    *binaries* ``(dunder, operator name, label, reflected, plain)`` for each operator that a
    template may answer (``plain``: the method without the template's check), and its
    ``__del__``. *configure*: the scalar types, ``caller``'s code table and classifier,
    early replay's send and ``numpy.generic``. Nothing where the extension is not built."""
    if _held_ops is None:
        return
    _held_ops.configure(cls, *configure)
    for dunder, name, label, reflected, plain in binaries:
        setattr(cls, dunder, _held_ops.binary(name, label, getattr(cls, dunder), plain, reflected))
    cls.__del__ = _held_ops.finaliser(cls.__del__)


def run_class(run: type, template: type) -> None:
    """*run* (``template_run.TemplateRun``) and *template* (``StretchTemplate``), both
    classes of slots, are those of the runs the C methods check ops against and of their
    templates: their slots are read and written in place, not through getattr (most of a
    compiled op's cost was those lookups). Nothing where not built."""
    if _held_ops is not None:
        _held_ops.run_class(run, template)
