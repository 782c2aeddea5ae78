"""Packing from several threads at once (protocol/codec.py ``thread_packs``): each thread
packs with a Packer of its own. One Packer reuses one buffer, and its ``default`` (a tuple, a
handle) is Python code during which another thread may run: two threads sharing it sent
each other's bytes. A client's heartbeat thread did so beside its main thread, its beat
went out undecodable, the door refused it and the session was reported lost
(docs/fair-share.md, "The lost session found"). Here two real threads pack as fast as they
can, the interpreter switching between them every microsecond."""

from __future__ import annotations

import sys
import threading

from gpu_backend.protocol import codec

ROUNDS = 10_000
BEAT = {"t": "hb", "session": "0123456789abcdef", "key": b"k" * 32}
HEADER = {"k": b"x" * 32, "b": 5, "n": 4, "r": 0, "T": [3, 17, [1, 2, 3], [], [4]],
          "x": (1, 2), "h": [codec.Handle(7), (codec.Handle(8), slice(1, 9, 2))]}


def _packed_at_once(pack_beat, pack_header) -> list:
    """Both threads' packs, each unpacked and compared with what was packed: the wrong ones."""
    wrong: list = []

    def packing(pack, value) -> None:
        for _ in range(ROUNDS):
            data = pack(value)
            try:
                if codec.unpackb(data) != value:
                    wrong.append(data)
            except ValueError as exc:
                wrong.append(repr(exc))

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        beat = threading.Thread(target=packing, args=(pack_beat, BEAT))
        beat.start()
        packing(pack_header, HEADER)
        beat.join()
    finally:
        sys.setswitchinterval(switch)
    return wrong


def test_packb_from_two_threads_gives_each_its_own_bytes():
    """``codec.packb`` in a heartbeat thread and a main thread at once: every message whole."""
    assert _packed_at_once(codec.packb, codec.packb) == []


def test_a_thread_packs_function_is_each_threads_own():
    """A pack function of :func:`codec.thread_packs` (the session's header packer) shared by
    two threads, beside ``packb`` in one of them: every message whole."""
    shared = codec.thread_packs()
    assert _packed_at_once(shared, shared) == []
    assert _packed_at_once(codec.packb, shared) == []
