"""A held stretch's run answered on the client from its template (stretch replay's fast
path; kernelproxy/stretch_templates.py says what a template holds, and how a run meets it).

A :class:`TemplateRun` checks each op of a stretch that begins as a template does against
the template's next op, numbers it, hands out its result with the template's metadata, and
at the stretch's sync point makes the one replay entry that stands for its ops; or falls
back, its ops so far written as the records the client would have sent. The compiled
operators (kernelproxy/_held_ops.c) read and write its slots in place.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any
from weakref import ref as _weakref

import msgpack
import numpy as np

from gpu_backend.protocol import api
from gpu_backend.protocol.stretches import INT_PARAM_HIGH, INT_PARAM_LOW, is_param

from . import early_replay
from . import held_ops
from .held_ops import call_site as _c_call_site
from .caller import call_site, site_line
from .index_shape import basic_index_shape
from .issue import array_class
from .stretch_key import FixedDefinition, literal_key, name_key
from .stretch_templates import (CODE_INPUT, CODE_RESULT, CODE_SCALAR, PLAIN_TYPES,
                                SliceLiteral, StretchTemplate, Templates, same_index)

__all__ = ["TemplateRun"]

_ARRAY, _MULTI, _OBJECT = api.ARRAY, api.MULTI, api.OBJECT
_pack_free = msgpack.Packer(autoreset=True).pack
_second = itemgetter(1)




class _Miss(Exception):
    """An argument that is not what the template has there."""


class TemplateRun:
    """One run of a stretch that *session* answers from *template* (one of *templates*),
    its first op numbered *first*: the handles, inputs, parameters, lines and frees it met.
    Called with the session's lock held."""

    __slots__ = ("session", "templates", "template", "i", "first", "first_hid", "hids",
                 "results", "inputs", "input_of", "params", "lines", "frees", "predicted",
                 "_array", "_bound", "ids", "early", "compiled", "_kept", "lock", "arrays",
                 "payload")

    def __init__(self, session: Any, templates: Templates, template: StretchTemplate,
                 first: int, first_hid: int) -> None:
        self.session = session
        self.templates = templates
        self.template = template
        self.i = 0                       # the next op's index in the template
        self.first = first               # the first op's sequence number
        self.first_hid = first_hid       # handles from here on are this run's
        self.hids: list[int | None] = []      # each op's result handle (None: none)
        self.results: list[int] = []          # each result slot's handle
        self.inputs: list[int | None] = [None] * template.n_inputs
        self.input_of: dict[int, int] = {}    # handle -> input slot
        self.params: list[Any] = []
        self.lines: list[tuple] = []          # each op's (label, its caller's call_site)
        self.frees: list[tuple[int, int]] = []   # (ops taken before it, handle)
        #: handle -> the metadata handed out with its array (kernelproxy.issue.wrap)
        self.predicted: dict[int, tuple] = {}
        self._array = array_class()
        self._bound: list[int] = []
        #: where the results' handles come from: the session's ids, or first those an
        #: early replay reserved (kernelproxy/early_replay.py), which it sent already
        self.ids = session._ids
        self.early: Any = None   # the early replay sent for this run, while undecided
        #: whether the compiled operators answer this run's ops (kernelproxy/held_ops.py;
        #: off: the Python methods below, the reference, answer them)
        self.compiled = session.settings.compiled
        #: the frees kept, as complete() found them: (template, frees then, handles)
        self._kept: tuple | None = None
        #: the session's lock and its arrays (each the same object for the session's life),
        #: where the compiled operators read them: a slot, not the session's dict
        self.lock = session._lock
        self.arrays = session.arrays
        #: the data of the uploads taken, a frame each in order: they travel with the
        #: replay (Session._replay_batch), or join the queue's where the run falls back
        self.payload: list = []

    # ------------------------------------------------------------ the ops
    def operator(self, name: str, operands: tuple, label: str) -> Any:
        """Python's arithmetic or comparison operator *name* on *operands*, the template's
        next op: its result array at once (its metadata from the template where it
        follows), or None where it is not (the ordinary path then: :meth:`take` looks at
        other templates, or the run falls back). The commonest op of a loop's body, so it
        is checked here in one function, without the general path's layers."""
        session = self.session
        lock = session._lock
        lock.acquire()
        try:
            if session._run is not self:   # (ended meanwhile: by another thread, a collection)
                return None
            i = self.i
            plans = self.template.plans
            if not 0 <= i < len(plans):   # (as the compiled check: never plans[-1])
                return None
            plan = plans[i]
            if plan is None or plan[0] != name:
                return None
            codes = plan[1]
            if len(codes) != len(operands) or len(codes) > 2:
                return None
            params = self.params
            mark = len(params)
            self._bound.clear()
            if not (self._operand_fits(operands[0], codes[0], session, params)
                    and (len(codes) == 1
                         or self._operand_fits(operands[1], codes[1], session, params))):
                del params[mark:]   # (not the template's op: nothing of it stays)
                self._undo()
                return None
            self._bound.clear()   # (committed: no later miss may unbind them)
            hid = next(self.ids)
            array = object.__new__(self._array)
            array._s, array._h, array._m = session, hid, plan[3]
            session.arrays[hid] = _weakref(array)
            self.hids.append(hid)
            self.results.append(hid)
            # (from the caller of the operator's method: the user, mostly)
            self.lines.append((label, call_site(3)))
            session._seq += 1
            self.i = i = i + 1
            if i == self.template.early_at:
                early_replay.send(session, self)
            return array
        finally:
            lock.release()

    def _operand_fits(self, value: Any, code_arg: tuple, session: Any, params: list) -> bool:
        """Whether an operator's operand is what the template's plan has there (an input
        met the first time is bound to its slot, a parameter's value kept)."""
        code, arg = code_arg
        if code == CODE_RESULT:
            return type(value) is self._array and value._s is session and value._h == self.hids[arg]
        if code == CODE_SCALAR:
            if type(value) is not arg or (arg is int and not INT_PARAM_LOW <= value < INT_PARAM_HIGH) \
                    or value != value:
                return False   # (an int too large, a NaN, is no parameter: is_param)
            params.append(value)
            return True
        if code == CODE_INPUT:
            if type(value) is not self._array or value._s is not session:
                return False
            hid = value._h
            have = self.inputs[arg]
            if have is not None:
                return have == hid
            if hid >= self.first_hid or hid in self.input_of \
                    or self._meta(value, hid) != self.template.input_metas[arg]:
                return False
            self.inputs[arg] = hid
            self.input_of[hid] = arg
            self._bound.append(arg)
            return True
        # a NumPy scalar of the recorded dtype (not a NaN: is_param)
        if not isinstance(value, np.generic) or value.dtype.str != arg:
            return False
        item = value.item()
        if item != item:
            return False
        params.append(item)
        return True

    def array_op(self, kind: str, name: Any, target: Any, args: tuple | list,
                 kwargs: dict | None, label: str) -> Any:
        """An op whose result is a new array (a function's, a method's, an index's), the
        template's next: its array at once, or None where it is not (the ordinary path
        then). :meth:`take`'s check, without the session's submit and wrap around it."""
        session = self.session
        lock = session._lock
        lock.acquire()
        try:
            if session._run is not self:
                return None
            hid = next(self.ids)
            if not self.take(kind, _ARRAY, hid, name, target, args, kwargs, label, 4):
                session._fall_back(at_op=True)   # (now: the session's submit would match it again)
                return None
            array = object.__new__(self._array)
            array._s, array._h, array._m = session, hid, self.predicted.pop(hid, None)
            session.arrays[hid] = _weakref(array)
            return array
        finally:
            lock.release()

    def take(self, kind: str, want: str, out: int | None, name: Any, target: Any,
             args: tuple | list, kwargs: dict | None, label: str, depth: int = 3) -> bool:
        """Whether the op is the template's next (True: it is taken, numbered, its line
        kept, *depth* frames up where the user's code called); False: it is not, and the
        run is to fall back."""
        template = self.template
        i = self.i
        if want == _MULTI or want == _OBJECT:
            return False
        if type(out) is list:   # (a call of several results: keyed with its count)
            want = (want, len(out))
        if i >= len(template.ops) or not self._matches(template.checks[i], template.names[i],
                                                       kind, want, name, target, args, kwargs,
                                                       template.index_checks[i]):
            for other in self.templates.sharing(template, i):   # (another held stretch of
                if i < len(other.ops) and self._switch(other):  # the same start)
                    if self._matches(other.checks[i], other.names[i], kind, want, name, target,
                                     args, kwargs, other.index_checks[i]):
                        template = other
                        break
                    self._switch(template)
            else:
                return False
        slot = template.slot_of[i]
        if (slot is None) != (out is None):   # (a call's count is in its want: matched)
            self._undo()
            return False
        self.hids.append(out)
        if type(out) is list:   # (its pieces: a result slot each, in place order)
            self._pieces(out, template.predicted[slot:slot + len(out)])
        elif out is not None:
            self.results.append(out)
            meta = template.predicted[slot]
            if meta is not None:
                self.predicted[out] = meta
        # (the user's frame: the same found in C where the run's operators are compiled)
        self.lines.append((label, _c_call_site() if self.compiled and _c_call_site is not None
                           else call_site(depth)))
        self.session._seq += 1
        self.i = i = i + 1
        self._bound.clear()
        if i == template.early_at:
            early_replay.send(self.session, self)
        return True

    def _pieces(self, out: list, metas: list) -> None:
        """A call of several results taken: its pieces' handles *out* are the run's next
        result slots, each handed out with its *metas* (None: asked of the worker)."""
        self.results.extend(out)
        for hid, meta in zip(out, metas):
            if meta is not None:
                self.predicted[hid] = meta

    def freed(self, hid: int) -> None:
        """The client dropped array *hid* now (after the ops taken so far)."""
        self.frees.append((self.i, hid))

    def dropped(self, hid: int, unread: bool) -> None:
        """The client dropped *hid*, a result of this run (its array's ``__del__``): as
        :meth:`Session.release` would, without its metadata's bookkeeping (none was sent
        or asked for); the ordinary release if the run has ended meanwhile, or if another
        thread holds the session (Session.release: a collection in any thread never waits)."""
        session = self.session
        lock = session._lock
        if not lock.acquire(blocking=False):
            session.release(hid, unread)
            return
        try:
            if session._run is self:
                self.frees.append((self.i, hid))
                session.arrays.pop(hid, None)
                return
        finally:
            lock.release()
        session.release(hid, unread)

    def _switch(self, other: StretchTemplate) -> bool:
        """Go on as a run of *other*, whose first ops are this template's (Templates.sharing),
        where this run so far is one of it too: its inputs had the metadata *other*'s had,
        its results were handed out as *other*'s. Its inputs are renumbered as *other*
        numbers them. Whether it switched."""
        template = self.template
        inputs = [None] * other.n_inputs
        for canon, slot in enumerate(template.canon_slot):
            hid = self.inputs[slot]
            if hid is None:
                continue
            if canon >= len(other.canon_slot):
                return False
            theirs = other.canon_slot[canon]
            if other.input_metas[theirs] != template.input_metas[slot]:
                return False
            inputs[theirs] = hid
        for slot in range(len(self.results)):   # (every piece, not each op's first slot)
            if other.predicted[slot] != template.predicted[slot]:
                return False
        self.template, self.inputs = other, inputs
        self.input_of = {hid: n for n, hid in enumerate(inputs) if hid is not None}
        return True

    def _matches(self, record: tuple, plain_name: str | None, kind: str, want: str, name: Any,
                 target: Any, args: tuple | list, kwargs: dict | None,
                 index_check: Any = None) -> bool:
        """Whether the op is the template's op of key *record* (its parameters kept, its
        inputs bound; nothing of it where not). *index_check*: a ``getitem`` whose index
        holds parameters, StretchTemplate.index_checks'."""
        if record[0] != kind or record[1] != want:
            return False
        self._bound.clear()
        params = len(self.params)
        try:
            if index_check is not None and len(args) == 2 and same_index(args[1], index_check[1]):
                # (the offered run's very index, a stencil's ``u[1:-1]``: its shape too)
                if record[2] != ("l", "str", name) or len(record[4]) != 2:
                    return False
                self._match(args[0], record[4][0])
                self.params.extend(index_check[2])
                return True
            if len(record) == 4:   # an arithmetic or comparison operator (keyed so)
                roles = record[3]
                if record[2] != name or len(roles) != len(args):
                    return False
                for value, role in zip(args, roles):
                    self._operand(value, role)
                return True
            if type(name) is str and plain_name is not None:   # (the commonest: as its key)
                if name != plain_name:
                    return False
            elif record[2] != name_key(name):   # (a structure's dtype, an upload's, by its parts)
                return False
            self._match(target, record[3])
            roles = record[4]
            if len(roles) != len(args):
                raise _Miss
            for value, role in zip(args, roles):   # (a ufunc's parameters: "s", _match's)
                self._match(value, role)
            roles = record[5]
            if len(roles) != (len(kwargs) if kwargs else 0):
                raise _Miss
            for key, role in roles:
                if key not in kwargs:
                    raise _Miss
                self._match(kwargs[key], role)
            if index_check is not None:   # (a moving slice: the template's shape, or a miss)
                shape = index_check[0]
                meta = self._meta(args[0], self._handle(args[0])) if shape is not False else None
                if meta is None or basic_index_shape(meta[0], args[1]) != shape:
                    raise _Miss
            return True
        except Exception:   # _Miss, or a value no key holds (the ordinary path says what)
            del self.params[params:]
            self._undo()
            return False

    def _undo(self) -> None:
        """Unbind the inputs a failed match bound."""
        for n in self._bound:
            self.input_of.pop(self.inputs[n], None)
            self.inputs[n] = None
        self._bound.clear()

    def _operand(self, value: Any, role: tuple) -> None:
        if role[0] != "s":
            self._match(value, role)
            return
        if not is_param(value):
            raise _Miss
        if isinstance(value, np.generic):
            if value.dtype.str != role[1]:
                raise _Miss
            self.params.append(value.item())
        else:
            if type(value).__name__ != role[1]:
                raise _Miss
            self.params.append(value)

    def _match(self, value: Any, role: Any) -> None:
        """Raise _Miss unless *value* has *role* in this run (the key's rules: its
        ``_role``)."""
        if role is None:
            if value is not None:
                raise _Miss
            return
        if type(role) is SliceLiteral:
            if type(value) is not slice or value != role.value or (
                    type(value.start), type(value.stop), type(value.step)) != role.types:
                raise _Miss
            return
        tag = role[0]
        if tag == "s":   # (an int of a basic index: a parameter)
            self._operand(value, role)
            return
        if tag == "r" or tag == "i":
            hid = self._handle(value)
            if tag == "r":
                made = self.hids[role[1]]
                if len(role) == 3:   # (a piece of a call of several results)
                    if type(made) is not list or role[2] >= len(made):
                        raise _Miss
                    made = made[role[2]]
                if hid is None or hid != made:
                    raise _Miss
                return
            if hid is None or hid >= self.first_hid:
                raise _Miss
            n = role[1]
            bound = self.inputs[n]
            if bound is not None:
                if bound != hid:
                    raise _Miss
                return
            if hid in self.input_of or self._meta(value, hid) != self.template.input_metas[n]:
                raise _Miss
            self.inputs[n] = hid
            self.input_of[hid] = n
            self._bound.append(n)
            return
        kind = type(value)
        if kind in PLAIN_TYPES:   # the commonest literals, told without building their key
            if tag != "l" or len(role) != 3 or role[1] != kind.__name__ or role[2] != value:
                raise _Miss
            return
        if kind is slice:
            if tag != "slice":
                raise _Miss
            _, start, stop, step = role
            for part, expected in ((value.start, start), (value.stop, stop), (value.step, step)):
                if expected[0] == "s":   # (a moving bound: a parameter)
                    self._operand(part, expected)
                elif type(part) not in PLAIN_TYPES or expected[1] != type(part).__name__ \
                        or expected[2] != part:
                    raise _Miss
            return
        if kind is FixedDefinition:   # (a kernel's definition: its token)
            if role != value.key:
                raise _Miss
            return
        if self._handle(value) is not None:   # an array where the template has a value
            raise _Miss
        if tag == "tuple" or tag == "list":
            inner = role[1]
            if type(value).__name__ != tag or len(value) != len(inner):
                raise _Miss
            for v, r in zip(value, inner):
                self._match(v, r)
            return
        if tag == "dict":
            items = role[1]
            if type(value) is not dict or len(value) != len(items):
                raise _Miss
            for key, r in items:
                if key not in value:
                    raise _Miss
                self._match(value[key], r)
            return
        if literal_key(value) != role:
            raise _Miss

    def _handle(self, value: Any) -> int | None:
        if type(value) is self._array:
            if value._s is not self.session:
                raise _Miss
            return value._h
        return self.session._handle_of(value)

    def _meta(self, value: Any, hid: int) -> tuple | None:
        meta = getattr(value, "_m", None)
        return meta if meta is not None else self.session.meta.peek(hid)

    # ------------------------------------------------------------ the end
    def complete(self) -> list | None:
        """At the stretch's sync point: the replay entry (``T``) for this run, or None
        where it cannot be replayed (a fall-back is due)."""
        # the template of the ops taken, or another held stretch of the same ops whose drops
        # fit this run (a loop whose last result is kept in some runs and dropped in others);
        # the run's own first, before the others are even looked for
        own = self.template
        if len(own.ops) == self.i and self._drops_fit(own):
            template = own
        else:
            for template in self.templates.sharing(own, self.i):
                if len(template.ops) == self.i and self._switch(template) \
                        and self._drops_fit(template):
                    break
                if self.template is not own:
                    self._switch(own)
            else:
                return None
        results = self.results
        if template.unpredicted:
            freed = self._freed()
            need = [slot for slot in template.unpredicted if results[slot] not in freed]
        else:
            need = []
        # (a held stretch of the same ops may drop more arrays the ops never name: 0 for them)
        n_inputs = template.n_inputs
        inputs = self.inputs
        if len(inputs) == n_inputs and None not in inputs:
            inputs = list(inputs)
        else:
            inputs = [0 if h is None else h for h in inputs[:n_inputs]]
            inputs += [0] * (n_inputs - len(inputs))
        return [template.sid, self.first, inputs,
                self.params, results, need]

    def _freed(self) -> set[int]:
        """The handles the client dropped during the run, and since the stretch began."""
        freed = set(map(_second, self.frees))
        freed.update(self.session.stretch_frees)
        return freed

    def _dropped_results(self, template: StretchTemplate) -> set[int]:
        """The handles of this run's results that *template*'s stretch drops (its slots
        that this run has reached)."""
        results = self.results
        if template.drop_slots and template.drop_slots[-1] < len(results):
            return set(map(results.__getitem__, template.drop_slots))
        return {results[slot] for slot in template.drop_slots if slot < len(results)}

    def _drops_fit(self, template: StretchTemplate) -> bool:
        """Whether the client dropped all that *template*'s stretch drops (else the worker
        would drop an array the client holds). What the run keeps of its frees is worked
        out with it (:meth:`kept_frees`): the sets of ~20 handles are a good part of a sync
        point's cost."""
        frees, slots, results = self.frees, template.drop_slots, self.results
        if len(frees) == len(slots) and (not slots or slots[-1] < len(results)) \
                and list(map(_second, frees)) == list(map(results.__getitem__, slots)):
            dropped = None   # (the commonest: the frees are the dropped results, in order)
        else:
            dropped = self._dropped_results(template)   # (each must be among the frees)
            left = dropped.copy()
            left.difference_update(map(_second, frees))
            if left:
                left.difference_update(self.session.stretch_frees)
                if left:
                    return False
        if template.drops_inputs:   # (one the ops never name: none here, nothing held)
            freed, inputs = None, self.inputs
            for n in template.drops_inputs:
                if n < len(inputs) and inputs[n] is not None:
                    if freed is None:
                        freed = self._freed()
                    if inputs[n] not in freed:
                        return False
        self._kept = (template, len(frees),
                      [] if dropped is None else [hid for _at, hid in frees if hid not in dropped])
        return True

    def free_records(self) -> list[bytes]:
        """The client's frees met during the run, as free records (they follow the replay),
        but for the results its stretch drops: those never reach the worker's handle table,
        whatever becomes of the replay (a loop body of 20 ops would otherwise send, and the
        worker look up, 20 frees of handles it never held). Dropped inputs are still sent:
        a replay the worker cannot even read frees them only so."""
        kept = self.kept_frees()
        return [_pack_free(hid) for hid in kept] if kept else []

    def kept_frees(self) -> list[int]:
        """The handles of :meth:`free_records` (those :meth:`complete` worked out, where
        nothing has changed since)."""
        template = self.template
        known = self._kept
        if known is not None and known[0] is template and known[1] == len(self.frees):
            return list(known[2])
        dropped = self._dropped_results(template)
        return [hid for _at, hid in self.frees if hid not in dropped]

    def fall_back(self) -> tuple[list[bytes], list[tuple]]:
        """The ops taken so far as the records the client would have sent, with its frees
        where they came, and each op's (seq, label, file, line, result handle) for its
        origin; the session's key of the stretch goes on from them (StretchKey.resume)."""
        template, taken = self.template, self.i
        outs = list(self.results) + [0] * (template.n_results - len(self.results))
        ops = template.records.op_records(self.first, [0 if h is None else h for h in self.inputs],
                                          self.params, outs, taken)
        records: list[bytes] = []
        frees = self.frees
        at = 0
        for index in range(taken + 1):
            while at < len(frees) and frees[at][0] <= index:
                records.append(_pack_free(frees[at][1]))
                at += 1
            if index < taken:
                records.append(ops[index])
        origins = [(self.first + index, label, *site_line(site), self.hids[index])
                   for index, (label, site) in enumerate(self.lines)]
        self.session.stretches.current.resume(template.ops[:taken], self.inputs, self.params,
                                              self.hids, frees)
        return records, origins

    def origins(self) -> dict[int, tuple]:
        """Each op's origin (``Session._origin``'s entries), made only when a reply needs
        them (an error, a warning, a cancel)."""
        return {self.first + index: (label, *site_line(site), self.hids[index])
                for index, (label, site) in enumerate(self.lines)}


held_ops.run_class(TemplateRun, StretchTemplate)   # (the compiled operators read their slots)
