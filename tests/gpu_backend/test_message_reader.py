"""framing.MessageReader: the same-host link's messages read through one buffer per connection.

Real socket pairs. A reader takes a small message in one recv, and with it whatever the
peer wrote after it: those bytes must come out as the next message, frames larger than
its buffer must still arrive whole, and a broken or closed peer must read as before.
"""

import select
import socket
import struct
import threading
import time

import numpy as np
import pytest

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol import codec, framing
from gpu_backend.protocol.errors import ProtocolError
from gpu_backend.protocol.errors import ProtocolError
from kernelproxy.modules import module_for


@pytest.fixture
def pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    yield a, b
    a.close()
    b.close()


def wire(*frames: bytes) -> bytes:
    return b"".join(bytes(v) for v in framing.message_views(list(frames)))


def frames_of(message) -> list[bytes]:
    return [f.bytes for f in message]


def test_messages_written_at_once_come_out_one_by_one(pair):
    a, b = pair
    a.sendall(wire(b"first", b"") + wire(b"second", b"x" * 3) + wire(b"third"))
    reader = framing.MessageReader(b)
    assert frames_of(reader.read_message()) == [b"first", b""]
    assert reader.buffered > 0   # the next messages came with the first: a poll would not see them
    assert frames_of(reader.read_message()) == [b"second", b"xxx"]
    assert frames_of(reader.read_message()) == [b"third"]
    assert reader.buffered == 0


def test_frames_larger_than_the_buffer_and_the_message_after_them(pair):
    a, b = pair
    big = np.random.default_rng(0).integers(0, 255, 3 << 20, dtype=np.uint8).tobytes()
    payload = wire(b"head", big) + wire(b"after")
    writer = threading.Thread(target=a.sendall, args=(payload,))
    writer.start()
    reader = framing.MessageReader(b, size=4096)
    got = reader.read_message()
    assert got[0].bytes == b"head" and got[1].bytes == big
    assert frames_of(reader.read_message()) == [b"after"]
    writer.join()


def test_a_header_of_more_frames_than_the_buffer_holds(pair):
    a, b = pair
    frames = [bytes([i % 256]) for i in range(3000)]   # a 24 KB header
    writer = threading.Thread(target=a.sendall, args=(wire(*frames) + wire(b"next"),))
    writer.start()
    reader = framing.MessageReader(b, size=1024)
    assert frames_of(reader.read_message()) == frames
    assert frames_of(reader.read_message()) == [b"next"]
    writer.join()


def test_a_message_in_pieces_on_a_non_blocking_socket_waits_for_the_rest(pair):
    a, b = pair
    b.setblocking(False)
    waits = []

    def wait():
        waits.append(1)
        ready, _, _ = select.select([b], [], [], 5)
        if not ready:
            raise TimeoutError("stalled")

    data = wire(b"a" * 100, b"b" * 5000)

    def dribble():
        for i in range(0, len(data), 700):
            a.sendall(data[i:i + 700])
            time.sleep(0.002)
    writer = threading.Thread(target=dribble)
    writer.start()
    reader = framing.MessageReader(b, wait, size=512)
    assert frames_of(reader.read_message()) == [b"a" * 100, b"b" * 5000]
    writer.join()
    assert waits   # it waited in the caller's wait, not in a blocking recv


def test_a_stalled_peer_raises_from_the_wait(pair):
    a, b = pair
    b.setblocking(False)
    a.sendall(wire(b"0123456789")[:7])   # part of a header

    def wait():
        raise TimeoutError("stalled")
    with pytest.raises(TimeoutError):
        framing.MessageReader(b, wait).read_message()


@pytest.mark.parametrize("garbage", [struct.pack("<I", 0), struct.pack("<I", (1 << 16) + 1),
                                     struct.pack("<IQ", 1, (1 << 40) + 1)])
def test_a_header_beyond_the_limits_is_a_protocol_error(pair, garbage):
    a, b = pair
    a.sendall(garbage)
    with pytest.raises(ProtocolError):
        framing.MessageReader(b).read_message()


def test_a_peer_closing_mid_message_is_eof(pair):
    a, b = pair
    a.sendall(wire(b"x" * 100)[:50])
    a.close()
    with pytest.raises(EOFError):
        framing.MessageReader(b).read_message()


def test_read_exact_takes_buffered_bytes_first(pair):
    a, b = pair
    chunk = np.arange(1000, dtype=np.float32)
    a.sendall(wire(b"reply") + wire(chunk.tobytes()))
    reader = framing.MessageReader(b)
    assert frames_of(reader.read_message()) == [b"reply"]
    into = np.zeros(1000, np.float32)
    (length,) = reader.read_lengths()
    reader.read_exact(memoryview(into).cast("B")[:length])
    assert np.array_equal(into, chunk)


def test_the_worker_answers_batches_that_arrive_in_one_write():
    """Two batches (and a third, later) written to the worker's socket in one go: it reads
    both with one recv and must answer the second without waiting for more bytes."""
    from gpu_backend.protocol import api
    from gpu_backend.protocol import messages as m
    with LocalPool(devices="cpu") as pool:
        session = kernelproxy.connect(pool.address, pool.token)
        try:
            assert session.worker_address.startswith("unix://")
            x = module_for(session).arange(10)
            session.sync()
            path = session.worker_address.removeprefix("unix://")
            link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            link.connect(path)
            pack = codec.make_packer().pack

            def batch(number: int, seq: int) -> bytes:
                record = pack([seq, m.KIND_METHOD, api.VALUE, None, "sum"]) + pack([codec.Handle(x._h), [], {}])
                return wire(codec.packb({"k": session.key, "b": number, "n": 1, "r": None}) + record)
            # the key the connection opens with, and two batches, in one write
            link.sendall(wire(codec.packb({"t": "auth", "k": session.key})) + batch(1, 1) + batch(2, 2))
            reader = framing.MessageReader(link)
            link.settimeout(10)
            first = codec.unpackb(reader.read_message()[0].bytes)
            second = codec.unpackb(reader.read_message()[0].bytes)
            assert (first["b"], first["v"], first["e"]) == (1, [[1, 45]], None)
            assert (second["b"], second["v"], second["e"]) == (2, [[2, 45]], None)
            link.close()
        finally:
            session.close()


def test_a_buffered_message_is_taken_only_whole_and_never_waited_for(pair):
    """read_buffered_message (a peer not yet trusted): None while part of the message is to
    come, its bytes kept; the message once whole; refused past the limit; EOF at the end."""
    a, b = pair
    b.setblocking(False)
    data = wire(b"key", b"more")
    reader = framing.MessageReader(b, lambda: pytest.fail("it waited"))
    assert reader.read_buffered_message(4096) is None           # nothing yet
    a.sendall(data[:3])
    assert reader.read_buffered_message(4096) is None           # part of the count
    a.sendall(data[3:10])
    assert reader.read_buffered_message(4096) is None           # part of the lengths
    a.sendall(data[10:-1] + b"")
    assert reader.read_buffered_message(4096) is None           # one byte short
    a.sendall(data[-1:] + wire(b"next"))
    assert frames_of(reader.read_buffered_message(4096)) == [b"key", b"more"]
    assert frames_of(reader.read_message()) == [b"next"]         # what followed is kept
    a.sendall(wire(b"x" * 5000)[:100])
    with pytest.raises(ProtocolError):
        reader.read_buffered_message(4096)                       # too large to be a key
    a.close()
    with pytest.raises(EOFError):
        framing.MessageReader(b).read_buffered_message(4096)


def test_a_small_buffer_moves_a_partial_message_to_its_front(pair):
    """Messages that straddle the buffer's end: what is left moves to the front."""
    a, b = pair
    messages = [[bytes([i]) * (i % 23), b"tail%d" % i] for i in range(200)]
    a.sendall(b"".join(wire(*m) for m in messages))
    reader = framing.MessageReader(b, size=64)
    for m in messages:
        assert frames_of(reader.read_message()) == m
    assert reader.buffered == 0
