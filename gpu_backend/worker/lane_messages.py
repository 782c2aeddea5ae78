"""How the steady lane reads a loop's messages (worker/steady_lane.py): every number of a
replay's batch with where it lies and what its encoding holds (``layout``), and two batches
side by side (``Layout``): which integers step and by how much, which float parameters change,
and for how many messages the integers keep their widths on the wire."""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from ..protocol import codec

__all__ = ["Layout", "Reshaped", "layout", "read_batch", "MAX_STEPS", "DOUBLE"]

#: the fields that may step from one message of a loop to the next (paths in the header)
_STEPPING = {("b",), ("T", 1)}
#: the most iterations served in the lane before it is armed again from two messages
MAX_STEPS = 1 << 20

_FIXED = {0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8}     # unsigned ints, by their width
_SIGNED = {0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8}
_FLOATS = {0xca: 4, 0xcb: 8}


def _count(data: bytes, at: int, short: bool, sixteen: bool) -> tuple[int, int]:
    """A map's or an array's count of items at *at* (*short*: in its first byte's low four
    bits; else in the 16 or 32 bits after it) and where its items begin."""
    if short:
        return data[at] & 0x0f, at + 1
    width = 2 if sixteen else 4
    return int.from_bytes(data[at + 1:at + 1 + width], "big"), at + 1 + width


def _walk(data: bytes, at: int, path: tuple, out: list) -> int:
    """Record every unsigned integer of the msgpack value at *at* in *data* as (path, offset,
    width, the largest value its encoding holds, value) in *out*; returns the offset after
    the value (a signed one is not recorded: its bytes must then stay the same). Maps' keys are strings
    (the header's); anything else this reader does not know raises ValueError."""
    first = data[at]
    if first <= 0x7f:                                  # positive fixint: the byte is the value
        out.append((path, at, 1, 0x7f, first))
        return at + 1
    if 0x80 <= first <= 0x8f or first in (0xde, 0xdf):   # maps
        count, at = _count(data, at, first <= 0x8f, first == 0xde)
        for _ in range(count):
            key = data[at]
            if not 0xa0 <= key <= 0xbf:
                raise ValueError("a map key that is not a short string")
            size = key & 0x1f
            name = data[at + 1:at + 1 + size].decode()
            at = _walk(data, at + 1 + size, path + (name,), out)
        return at
    if 0x90 <= first <= 0x9f or first in (0xdc, 0xdd):   # arrays
        count, at = _count(data, at, first <= 0x9f, first == 0xdc)
        for i in range(count):
            at = _walk(data, at, path + (i,), out)
        return at
    if first in _FIXED:
        width = _FIXED[first]
        out.append((path, at + 1, width, (1 << (8 * width)) - 1,
                    int.from_bytes(data[at + 1:at + 1 + width], "big")))
        return at + 1 + width
    if first >= 0xe0:                                  # negative fixint
        return at + 1
    if first in _SIGNED:
        return at + 1 + _SIGNED[first]
    if first == 0xcb:   # a float 64 (a Python float's encoding): recorded, top None
        out.append((path, at + 1, 8, None, data[at + 1:at + 9]))
        return at + 9
    if first in _FLOATS:
        return at + 1 + _FLOATS[first]
    if first in (0xc0, 0xc2, 0xc3):                    # nil, false, true
        return at + 1
    if 0xa0 <= first <= 0xbf:                          # short strings
        return at + 1 + (first & 0x1f)
    if first in (0xc4, 0xd9):                          # bin 8, str 8
        return at + 2 + data[at + 1]
    if first in (0xc5, 0xda):                          # bin 16, str 16
        return at + 3 + int.from_bytes(data[at + 1:at + 3], "big")
    raise ValueError(f"a msgpack type this reader does not know: 0x{first:02x}")


class Reshaped(ValueError):
    """Two messages of different lengths (a number grew a byte: the loop's next two will
    have the same one again), told before either is read."""


def layout(data: bytes) -> list:
    """The integers of a replay's batch, in order: its header's (one msgpack map), then the
    frees after it (records that are handles alone: paths ``("R", i)``); anything else after
    the header raises ValueError."""
    out: list = []
    at = _walk(data, 0, (), out)
    i = 0
    while at < len(data):
        first = data[at]
        if not (first <= 0x7f or first in _FIXED):
            raise ValueError("a record other than a free after the header")
        at = _walk(data, at, ("R", i), out)
        i += 1
    return out


def read_batch(data: bytes) -> tuple[Any, list]:
    """A replay's batch read as the worker reads it: its header, and the handles freed after
    it (ValueError where a record is anything else)."""
    unpacker = msgpack.Unpacker(**codec.UNPACK_OPTIONS)
    unpacker.feed(data)
    header = unpacker.unpack()
    frees = list(unpacker)
    if any(type(h) is not int for h in frees):
        raise ValueError("a record other than a free after the header")
    return header, frees


class Layout:
    """Two messages of a loop read side by side: which integers step and by how much, and for
    how many more messages every one of them stays within what its encoding holds
    (``steps``), so that the next messages are the last one plus k times the difference of
    the two, read as integers (no carry from one field into another)."""

    def __init__(self, before: bytes, last: bytes) -> None:
        if len(before) != len(last):   # (before anything is read: a number grew a byte, or
            raise Reshaped("not the same length")   # two stretches take turns)
        a, b = layout(before), layout(last)
        if len(a) != len(b):
            raise ValueError("not the same shape")
        #: (path, step) of the integers that step
        self.stepping: list[tuple] = []
        #: (path, offset, value before, last value) of the float parameters that change (a
        #: loop's ``step * 0.5``): the next goes on as RunAhead's guess does, last + (last -
        #: before), written into the message at its offset (a float's bytes do not step)
        self.floats: list[tuple] = []
        #: the most messages after *last* whose integers all stay within their encodings
        self.steps = MAX_STEPS
        at = 0
        for (path, start, width, top, x), (path2, start2, width2, top2, y) in zip(a, b):
            if path != path2 or start != start2 or width != width2 or top != top2:
                raise ValueError("not the same shape")
            if before[at:start] != last[at:start]:   # (every byte but the numbers' values)
                raise ValueError("a byte other than a number's changes")
            at = start + width
            if x == y:
                continue
            if top is None:   # (a float: bytes compared, so a NaN is itself)
                if path[:2] != ("T", 3):
                    raise ValueError(f"{path} changes")
                self.floats.append((path, start, DOUBLE.unpack(x)[0], DOUBLE.unpack(y)[0]))
                continue
            if not _may_step(path):
                raise ValueError(f"{path} changes")
            step = y - x
            self.steps = min(self.steps, (top - y) // step if step > 0 else y // -step)
            self.stepping.append((path, step))
        if before[at:] != last[at:]:
            raise ValueError("a byte other than a number's changes")
        #: the last message read as an integer, its float parameters' bytes zeroed, and the
        #: two messages' difference so read: the next messages' integers, with no carry
        #: into the floats' bytes (none leaves an integer within its encoding)
        self.base = int.from_bytes(_zeroed(last, self.floats), "big")
        self.difference = self.base - int.from_bytes(_zeroed(before, self.floats), "big")


def _zeroed(data: bytes, floats: list) -> bytes:
    """*data* with the bytes of the floats at the offsets of *floats* zeroed."""
    if not floats:
        return data
    out = bytearray(data)
    for _path, at, _x, _y in floats:
        out[at:at + 8] = bytes(8)
    return bytes(out)


#: a float 64 as msgpack writes it (big-endian)
DOUBLE = struct.Struct(">d")


def _may_step(path: tuple) -> bool:
    """Whether the header's integer at *path* may step in a loop the lane serves: the batch,
    the entry's first op, its input handles (a loop-carried result), its result handles, the
    frees before and after it, and its int parameters (a slice's bounds that move by the
    batch, ``x + i``: the lane's run ahead takes each message's, lane_plans.stepped)."""
    return path in _STEPPING or path[:2] in (("T", 2), ("T", 3), ("T", 4)) \
        or path[:1] in (("F",), ("R",))
