"""Client objects that stand for objects living in the session's worker.

A :class:`RemoteObject` subclass names an allow-listed class of
:data:`gpu_backend.protocol.api.OBJECTS` (``class RandomState(RemoteObject,
remote="random.RandomState")``) and gets a method for each of that class's
allow-listed methods; each call is one op on the session, queued like an array op
(an array result comes back as a remote array without waiting). Creating one
costs no round trip: the client names it. It is dropped in the worker when the
client object is, the way an array is, and it can be passed to other ops (a
Generator's bit generator) as a handle.
"""

from __future__ import annotations

from typing import Any, Callable

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m

from .issue import call as _op
from .state import active_session

__all__ = ["RemoteObject", "remote_attribute"]


def _method(method: str):
    def call(self: RemoteObject, *args: Any, **kwargs: Any) -> Any:
        return self._call(method, *args, **kwargs)

    call.__name__ = call.__qualname__ = method
    return call


def remote_attribute(name: str, convert: Callable[[Any], Any] | None = None,
                     settable: bool = False) -> property:
    """An attribute of the worker's object (api.OBJECT_GETTERS), read on each access (an
    array comes back as a remote array, *convert* applied to anything else); *settable*:
    assigned there too (api.OBJECT_SETTERS), the assignment raising its error."""
    def get(self: "RemoteObject") -> Any:
        value = self._get(name)
        return value if convert is None else convert(value)

    def set_(self: "RemoteObject", value: Any) -> None:
        self._set(name, value, wait=True)

    return property(get, set_ if settable else None, doc=f"``{name}``, read from the pool.")


class RemoteObject:
    """An object of the session's worker; subclasses name its class with ``remote=``."""

    #: its class in api.OBJECTS (set by ``remote=``)
    _remote_class = ""
    #: the session's codec passes an instance as a handle (see Session._handle_of)
    _remote_object = True
    _s: Any = None
    _h: int | None = None

    def __init_subclass__(cls, remote: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if remote:
            cls._remote_class = remote
            for method in api.OBJECTS[remote]:
                if not hasattr(cls, method):   # a subclass's own (client-side checks) wins
                    setattr(cls, method, _method(method))

    def _create(self, args: tuple, kwargs: dict, wait: bool = False) -> str | None:
        """Create the worker's object from *args*; an error surfaces as an array op's does.
        With *wait*, wait for it and return the name of its type in the worker."""
        session = active_session()
        self._s = session
        self._h = session.new_id()
        seq = session.submit(m.KIND_OBJECT, api.VALUE if wait else api.NONE, self._h,
                             self._remote_class, None, args, kwargs,
                             label=f"cupy.{self._remote_class}")
        return session.value(seq) if wait else None

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call the worker object's allow-listed *method*."""
        want = api.OBJECTS[self._remote_class][method]
        name, label = f"{self._remote_class}.{method}", f"cupy.{self._remote_class}.{method}"
        if want == api.OBJECT:
            return self._new_object(name, args, kwargs, label)
        return _op(self._s, m.KIND_OBJECT, name, want, self._h, args, kwargs, label)

    def _new_object(self, name: str, args: tuple, kwargs: dict, label: str) -> Any:
        """A method whose result is a new object of the worker: it is kept there under a
        new id and stood for here by the class :meth:`_adopt` picks for its type's name
        (NotImplemented, for an operator the worker object declined)."""
        session = self._s
        hid = session.new_id()
        kind = session.value(session.submit(m.KIND_OBJECT, api.OBJECT, hid, name, self._h,
                                            args, kwargs, label=label))
        return NotImplemented if kind is None else self._adopt(hid, kind)

    def _adopt(self, hid: int, kind: str) -> "RemoteObject":
        """The client object for the worker's new object *hid* of type *kind* (classes
        with methods that make objects say which)."""
        raise NotImplementedError(f"cupy.{self._remote_class} has no methods that make objects")

    @classmethod
    def _made_by(cls, creator: str, args: tuple, kwargs: dict) -> tuple["RemoteObject", str]:
        """An instance of *cls* for the object the worker makes by calling *creator*, an
        allow-listed function of api.OBJECTS (``sparse.eye``, ``sparse.linalg.splu``), and
        the name of the made object's type. Keywords given as None are left out (the
        worker's defaults apply)."""
        obj = object.__new__(cls)
        obj._remote_class = creator   # (for the creation only: the class's own after)
        try:
            kind = obj._create(args, {k: v for k, v in kwargs.items() if v is not None}, wait=True)
        finally:
            del obj._remote_class
        return obj, kind

    @classmethod
    def _of(cls, session: Any, hid: int) -> "RemoteObject":
        """An instance standing for the worker's object *hid* (no op: it exists there)."""
        obj = object.__new__(cls)
        obj._s, obj._h = session, hid
        return obj

    def _get(self, attribute: str) -> Any:
        """Read an attribute of api.OBJECT_GETTERS from the worker's object (arrays come
        back as remote arrays)."""
        return _op(self._s, m.KIND_OBJECT, f"{self._remote_class}.{attribute}", api.MULTI,
                   self._h, (), {}, f"cupy.{self._remote_class}.{attribute}")

    def _set(self, attribute: str, value: Any, wait: bool = False) -> None:
        """Set an attribute of api.OBJECT_SETTERS on the worker's object (with *wait*, its
        error is raised here, by the assignment)."""
        _op(self._s, m.KIND_OBJECT, f"{self._remote_class}.{attribute}",
            api.VALUE if wait else api.NONE, self._h, (value,), {},
            f"cupy.{self._remote_class}.{attribute}")

    def __del__(self) -> None:
        try:
            if self._h is not None and not self._s.closed:
                self._s.release(self._h)
        except Exception:  # interpreter shutdown or a half-built object
            pass

    def __repr__(self) -> str:
        return f"<cupy.{self._remote_class} {self._h} (remote)>"
