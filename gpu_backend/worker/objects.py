"""The session's remote objects: instances of allow-listed classes and their method calls.

An op of kind ``KIND_OBJECT`` either names a class of :data:`api.OBJECTS`
(``random.RandomState``): the device builds one from the op's arguments and the
handle table keeps it under the id the client chose (the op's ``out``; the op's value
is the name of the object's type, for a client that must know it); or it
names ``class.method`` with the object's id as its target, and the method runs
with the op's arguments; or ``class.attribute`` of :data:`api.OBJECT_SETTERS`,
and the op's one argument becomes that attribute; or, with no arguments,
``class.attribute`` of :data:`api.OBJECT_GETTERS`, read, or of :data:`api.OBJECT_MEMBERS`,
read as a new object (a ``SuperLU``'s factor ``L``). The class is the device's own
(``cupy.random.RandomState`` on a GPU, a NumPy stand-in on the NumPy device): a
client names classes, methods and attributes only by these allow-listed strings,
and an object is found only among the session's own.
"""

from __future__ import annotations

from typing import Any

from ..protocol import api
from ..protocol.errors import NotAllowedError, ProtocolError
from .draw_journal import GENERATOR_CLASS, STATE_CLASS, NotUndoable

__all__ = ["run_object_call", "graphed_draw"]


def run_object_call(executor: Any, name: Any, target: Any, out: Any, args: list,
                    kwargs: dict, want: Any = None) -> Any:
    """Create an object, call one of its methods or set one of its attributes. A result
    kept as a new object (*want* OBJECT) must come from a method listed so, and be an
    object of the method's class (``to_ss()`` of a system is a system)."""
    device, table = executor.device, executor.table
    if type(name) is not str:
        raise ProtocolError("an object op is named by a string")
    if name in api.OBJECTS:
        if want == api.OBJECT:   # (the created object would be overwritten by its type's name)
            raise NotAllowedError("an object is created by naming its class, with its own id")
        obj = _class_of(device, name)[0](*args, **kwargs)
        table.put_object(out, obj)
        if name == GENERATOR_CLASS:   # (its seed and draws journaled: draw_journal.py)
            executor.draws.created(obj, args, kwargs)
        elif name == STATE_CLASS:
            executor.draws.created_stateful(obj)
        return type(obj).__name__   # (get_fft_plan's Plan1d or PlanNd: asked for by value)
    cls, _, member = name.rpartition(".")
    methods = api.OBJECTS.get(cls)
    members = api.OBJECT_MEMBERS.get(cls, {})
    if member in members:   # an attribute that is an object: kept as a new one
        if want != api.OBJECT or args or kwargs:
            raise NotAllowedError(f"{name!r} is read, as a new object")
        value = device.object_member(getattr(table.get_object(target, _class_of(device, cls)[1]),
                                             member))
        if not isinstance(value, _class_of(device, members[member])[1]):
            raise TypeError(f"{name} is a {type(value).__name__}, not a {members[member]}")
        return value
    settable = api.OBJECT_SETTERS.get(cls, ())
    readable = api.OBJECT_GETTERS.get(cls, ())
    if methods is None or (member not in methods and member not in settable
                           and member not in readable):
        raise NotAllowedError(f"{name!r} is not on the pool's allow-list")
    listed = methods.get(member)
    if listed == api.EITHER:   # (a sparse matrix's product: a matrix or an array)
        if want != api.OBJECT and want != api.ARRAY:
            raise NotAllowedError(f"{name!r} gives a new object or an array: ask for one")
    elif (want == api.OBJECT) != (listed == api.OBJECT):
        raise NotAllowedError(f"{name!r} does not make a new object" if want == api.OBJECT
                              else f"{name!r} makes a new object: ask for one")
    kind = _class_of(device, cls)[1]
    obj = table.get_object(target, kind)
    if member in methods:
        device.check_allocation(name, args, kwargs)
        journal = executor.draws
        if cls == GENERATOR_CLASS:
            result = journal.serve(obj, member, args, kwargs)
            if result is None:
                journal.before(obj, member, args, kwargs)
                try:
                    result = getattr(obj, member)(*args, **kwargs)
                except BaseException:
                    journal.failed(obj)
                    raise
                journal.after(obj, member, args, kwargs, result)
        elif cls == STATE_CLASS:
            journal.before_stateful(obj, member, args, kwargs)
            result = getattr(obj, member)(*args, **kwargs)
        elif journal.speculating:   # (a run ahead draws only from a generator)
            raise NotUndoable(f"{name} is not run ahead")
        else:
            result = getattr(obj, member)(*args, **kwargs)
        if want == api.OBJECT and result is not NotImplemented and not isinstance(result, kind):
            raise TypeError(f"{name} gave a {type(result).__name__}, not a new object of its kind")
        return result
    if not args and not kwargs and member in readable:
        return getattr(obj, member)
    if member not in settable:
        raise NotAllowedError(f"{name} is read-only")
    if len(args) != 1 or kwargs:
        raise ProtocolError(f"setting {name} takes one value")
    setattr(obj, member, args[0])
    if cls == STATE_CLASS:   # (a Generator's new bit generator: the graphs that draw from
        graphs = executor.replay.graphs   # its old one are captured again)
        if graphs is not None:
            graphs.generator_changed(target)
    return None


def graphed_draw(executor: Any, name: Any, target: Any, args: list, kwargs: dict) -> tuple:
    """The ``Generator`` and the method of its draw that a stretch's graph makes
    (worker/eager_ops.py's ``captured_draw``), checked as :func:`run_object_call` checks a
    call: the graph's launches draw through the method with no journal in between, as a
    GPU's launches do (the replay tells the journal first: StretchGraphs.before_draws)."""
    cls, _, member = name.rpartition(".")
    if cls != STATE_CLASS or member not in api.OBJECTS.get(cls, {}):
        raise NotAllowedError(f"{name!r} is not a Generator's draw on the pool's allow-list")
    executor.device.check_allocation(name, args, kwargs)
    generator = executor.table.get_object(target, _class_of(executor.device, cls)[1])
    return generator, getattr(generator, member)


def _class_of(device: Any, name: str) -> tuple:
    """The device's (constructor, type) for the allow-listed class *name*."""
    entry = device.object_class(name)
    if entry is None:
        raise NotImplementedError(f"{name} is not available on the {device.kind} device")
    return entry
