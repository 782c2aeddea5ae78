"""worker/loan_stream.py: a lent session's bytes streamed between two workers (issue 52),
over real sockets. The lanes' number is the lender's (the manifest tells the adopter: the
hosts' core counts may differ), so several lanes are exercised here whatever this host's
own count is; pieces dealt over them come back in order, bitwise."""

from __future__ import annotations

import threading

import numpy as np
import zmq

from gpu_backend.worker.loan_stream import PIECE, LoanReader, LoanServer


def _pieces_of(array: np.ndarray, piece: int):
    view = memoryview(array).cast("B")
    for at in range(0, view.nbytes, piece):
        yield view[at:at + piece]


def _stream(lanes: int, sizes: list[int], piece: int) -> tuple[list, list]:
    rng = np.random.default_rng(lanes)
    arrays = [rng.integers(0, 255, size, dtype=np.uint8) for size in sizes]
    server = LoanServer(zmq.Context.instance(), "127.0.0.1", None)
    server.lane_count = lanes
    served = []

    def serve() -> None:
        while not server.served:
            if server.sock.poll(5000):
                served.append(server.serve_one(_pieces_of, arrays, piece))
    thread = threading.Thread(target=serve)
    thread.start()
    reader = LoanReader(None, f"tcp://127.0.0.1:{server.port}", server.secret, None, lanes)
    try:
        got = []
        for size in sizes:   # (as the devices' allocation_from reads: piece by piece)
            block = np.empty(size, np.uint8)
            for at in range(0, size, piece):
                reader.fill(block[at:at + piece])
            got.append(block)
    finally:
        reader.close()
        thread.join(30)
        server.close()
    assert served[-1] is True
    return arrays, got


def test_pieces_dealt_over_several_lanes_come_back_in_order_bitwise():
    sent, got = _stream(3, [5 * PIECE // 4, 1000, 3 * PIECE], PIECE)
    assert all(np.array_equal(a, b) for a, b in zip(sent, got))


def test_a_reader_whose_buffers_are_smaller_than_a_piece_reads_through_the_frames():
    sent, got = _stream(2, [PIECE + 12345], PIECE // 3)
    assert np.array_equal(sent[0], got[0])


def test_a_stranger_without_the_secret_is_not_served():
    server = LoanServer(zmq.Context.instance(), "127.0.0.1", None)
    ctx = zmq.Context()
    try:
        stranger = ctx.socket(zmq.DEALER)
        stranger.connect(f"tcp://127.0.0.1:{server.port}")
        stranger.send_multipart([b"x" * 32, bytes([0])])
        assert server.sock.poll(5000)
        assert server.serve_one(_pieces_of, [np.ones(10, np.uint8)], PIECE) is False
        assert not server.served
        stranger.close(linger=0)
    finally:
        ctx.term()
        server.close()
