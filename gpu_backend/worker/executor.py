"""Run a batch of a client's ops on the session's device.

Called by the worker's socket loop once per incoming batch. Each op is
decoded only when its turn comes, so an op may name arrays created by the
ops before it in the same batch. The first op that fails *poisons* the
session: the rest of that batch and every later batch are skipped (as a
local program would never have run them) until the client, having raised
the error, sends a batch whose ``resume`` field acknowledges it.
"""

from __future__ import annotations

import warnings
from typing import Any, Iterator

import msgpack
import numpy as np

from ..devices import Device
from ..devices.base import OPERATOR_FUNCTIONS
from ..protocol import api, codec
from ..protocol import messages as m
from ..protocol.errors import NotAllowedError, ProtocolError, error_name, warning_name
from .handles import HandleTable

__all__ = ["Executor"]

_meta_packer = msgpack.Packer(use_bin_type=True, autoreset=True)


class Executor:
    def __init__(self, device: Device, table: HandleTable) -> None:
        self.device = device
        self.table = table
        self.poisoned_at: int | None = None
        self.ops_run = 0
        self._seq: Any = None
        self._warnings: list[list] = []
        self._hook = codec.ext_hook_for(table.get)
        self._is_array = device.is_array
        self._as_array = device.as_array
        warnings.showwarning = self._capture_warning
        warnings.simplefilter("always")  # the client's own filters decide what the user sees

    def _capture_warning(self, message, category, filename, lineno, file=None, line=None):
        self._warnings.append([self._seq, warning_name(category), str(message)])

    # ------------------------------------------------------------------ batch
    def run_batch(self, header: dict, ops: bytes, payload: list) -> tuple[dict, list]:
        """Execute one batch; returns the reply header and its payload frames."""
        resume = header.get("r")
        if self.poisoned_at is not None and type(resume) is int and resume >= self.poisoned_at:
            self.poisoned_at = None
        count = header.get("n", 0)
        metas: list = []
        values: list = []
        downloads: list = []
        out_frames: list = []
        error = None
        executed = 0
        if self.poisoned_at is None:
            executed, error = self._run_ops(ops, iter(payload), metas, values, downloads, out_frames)
            if header.get("y"):
                self.device.synchronize()
        for hid in header.get("f") or ():
            self.table.free(hid)
        reply = {
            "b": header.get("b"),
            "m": _meta_packer.pack(metas),
            "v": values,
            "d": downloads,
            "e": error,
            "w": self._warnings,
            "x": executed,
            "s": max(0, count - executed) if type(count) is int else 0,
        }
        self._warnings = []
        return reply, out_frames

    def _run_ops(self, ops, payload: Iterator, metas, values, downloads, out_frames):
        unpacker = msgpack.Unpacker(
            ext_hook=self._hook, raw=False, strict_map_key=True, max_buffer_size=max(len(ops), 1 << 16)
        )
        unpacker.feed(ops)
        executed = 0
        seq = None
        try:
            for head in unpacker:
                if type(head) is not list or len(head) != 5:
                    raise ProtocolError("malformed op record")
                seq, kind, want, out, name = head
                self._seq = seq
                body = unpacker.unpack()  # resolves handles now, after the ops before it ran
                if type(body) is not list or len(body) != 3:
                    raise ProtocolError("malformed op arguments")
                target, args, kwargs = body
                if type(args) is not list or type(kwargs) is not dict:
                    raise ProtocolError("malformed op arguments")
                if kind == m.KIND_DOWNLOAD:
                    self._download(seq, target, downloads, out_frames)
                else:
                    if kind == m.KIND_UPLOAD:
                        result = self._upload(name, args, payload)
                    else:
                        result = self._call(kind, name, target, args, kwargs)
                    self._store(seq, want, out, result, metas, values)
                executed += 1
        except msgpack.OutOfData:
            error = [seq, "ProtocolError", "truncated op record", None]
            self.poisoned_at = seq if type(seq) is int else 0
            return executed, error
        except Exception as exc:  # the op's own error, reported to the client
            self.poisoned_at = seq if type(seq) is int else 0
            return executed, [seq, error_name(exc), _message(exc), None]
        self.ops_run += executed
        return executed, None

    # --------------------------------------------------------------- op kinds
    def _call(self, kind: str, name: Any, target: Any, args: list, kwargs: dict) -> Any:
        if kind == m.KIND_FUNCTION:
            fn = self.device.functions.get(name) if type(name) is str else None
            if fn is None:
                raise _refusal("function", name, api.FUNCTIONS, self.device.kind)
            self.device.check_allocation(name, args, kwargs)
            return fn(*args, **kwargs)
        if kind == m.KIND_OPERATOR:
            fn = OPERATOR_FUNCTIONS.get(name) if type(name) is str else None
            if fn is None:
                raise NotAllowedError(f"operator {name!r} is not on the pool's allow-list")
            return fn(*args, **kwargs)
        if kind == m.KIND_METHOD:
            fn = self.device.methods.get(name) if type(name) is str else None
            if fn is None:
                raise _refusal("method", name, api.METHODS, self.device.kind)
            if not self._is_array(target):
                raise ProtocolError("a method call needs an array handle as its target")
            return fn(target, *args, **kwargs)
        if kind == m.KIND_ATTRIBUTE:
            if name not in api.ATTRIBUTES:
                raise NotAllowedError(f"attribute {name!r} is not on the pool's allow-list")
            if not self._is_array(target):
                raise ProtocolError("an attribute needs an array handle as its target")
            if name == "T":
                return target.T
            if name == "real":
                return target.real
            if name == "imag":
                return target.imag
            return target.mT
        raise ProtocolError(f"unknown op kind {kind!r}")

    def _store(self, seq: Any, want: Any, out: Any, result: Any, metas: list, values: list) -> None:
        if want == api.ARRAY:
            array = self._as_array(result)
            if not self._is_array(array):
                raise TypeError(f"expected an array result, got {type(result).__name__}")
            self.table.put(out, array)
            metas.append(_meta(out, array))
        elif want == api.NONE:
            pass
        elif want == api.VALUE:
            values.append([seq, result])
        elif want == api.MULTI:
            values.append([seq, self._structure(out, result, metas)])
        else:
            raise ProtocolError(f"unknown result kind {want!r}")

    def _structure(self, out: Any, result: Any, metas: list) -> Any:
        """Store the arrays inside a structured result; return it with handles."""
        array = self._as_array(result)
        if self._is_array(array):
            if type(out) is int and out > 0:
                self.table.put(out, array)
                hid = out
            else:
                hid = self.table.put_new(array)
            metas.append(_meta(hid, array))
            return codec.Handle(hid)
        if isinstance(result, (tuple, list)):
            items = [self._structure(None, item, metas) for item in result]
            return tuple(items) if isinstance(result, tuple) else items
        return result

    def _upload(self, dtype: Any, args: list, payload: Iterator) -> Any:
        dt = codec.check_dtype(dtype)
        shape = codec.check_shape(args[0] if args else None)
        try:
            frame = next(payload)
        except StopIteration:
            raise ProtocolError("an upload op came without its data frame") from None
        count = int(np.prod(shape, dtype=np.int64))
        buffer = frame.buffer if hasattr(frame, "buffer") else memoryview(frame)
        if buffer.nbytes != count * dt.itemsize:
            raise ProtocolError(
                f"upload data has {buffer.nbytes} bytes, its shape and dtype need {count * dt.itemsize}"
            )
        self.device.check_allocation("empty", [shape, dt], {})
        host = np.frombuffer(buffer, dtype=dt, count=count).reshape(shape)
        return self.device.from_host(host)

    def _download(self, seq: Any, target: Any, downloads: list, out_frames: list) -> None:
        if not self._is_array(target):
            raise ProtocolError("a download needs an array handle")
        host = self.device.to_host(target)
        downloads.append([seq, host.dtype.str, list(host.shape)])
        out_frames.append(host)


def _meta(hid: int, a: Any) -> list:
    f = a.flags
    return [hid, a.shape, a.dtype.str, a.strides,
            f.c_contiguous | (f.f_contiguous << 1) | (f.owndata << 2)]


def _message(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, KeyError) and len(exc.args) == 1 and text.startswith("'"):
        text = str(exc.args[0])
    return text


def _refusal(what: str, name: Any, allowed: dict, device_kind: str) -> Exception:
    if type(name) is str and name in allowed:
        return NotImplementedError(f"{what} {name!r} is not available on the {device_kind} device")
    return NotAllowedError(f"{what} {name!r} is not on the pool's allow-list")
