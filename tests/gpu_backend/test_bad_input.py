"""Bad input against a live pool: answered with the right error, and harmless.

Every case runs against real sockets, a real front door and real worker
processes. After each one, a *bystander* session opened before any bad input
must still compute correctly (including an array it made at the start), and
the pool must still open new sessions. Garbage is seeded, so every run sends
the same bytes.
"""

from __future__ import annotations

import os
import random
import select
import signal
import socket
import subprocess
import sys
import textwrap
import time

import msgpack
import numpy as np
import pytest
import zmq

import kernelproxy
from gpu_backend.door.frontdoor import MAX_REQUEST_BYTES
from gpu_backend.pool import LocalPool
from gpu_backend.protocol import PROTOCOL_VERSION, api, codec, framing
from gpu_backend.protocol import messages as m
from gpu_backend.protocol.errors import (AuthenticationError, InvalidHandleError, NotAllowedError,
                                         ProtocolError, VersionMismatchError)
from gpu_backend.worker.presence import CLIENT_GONE
from kernelproxy.ndarray import wrap
from kernelproxy.connection import door_request
from kernelproxy.modules import module_for
from tests.paths import PROJECT_ROOT

from .bad_input_rig import LEASE, MB, REPLY_TIMEOUT, door_error, raw_request, worker_reply

ROOT = str(PROJECT_ROOT)


# ------------------------------------------------------------------ helpers

def garbage(seed: int, sizes=(1, 2, 7, 64, 1000, 100_000)) -> list[bytes]:
    rnd = random.Random(seed)
    return [rnd.randbytes(n) for n in sizes]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


# ------------------------------------------------------------------ the front door

def test_front_door_answers_garbage_with_protocol_error(bad_pool, bystander, zctx):
    hello = codec.packb({"t": "hello", "v": PROTOCOL_VERSION, "token": bad_pool.token})
    # (garbage up to the largest request the door reads: beyond it, the peer is dropped,
    # test_front_door_drops_a_peer_whose_request_is_too_large)
    cases = [[g] for g in garbage(1, sizes=(1, 2, 7, 64, 1000, MAX_REQUEST_BYTES - 16))] + [
        [b""],
        [hello[:-3]],                                  # truncated
        [hello[:1]],
        [hello + b"\x01"],                             # extra data
        [hello, hello],                                # two frames
        [b"", b"", b""],
        [codec.packb([1, 2, 3])],                      # not a map
        [codec.packb("hello")],
        [codec.packb({"t": "nope"})],                  # unknown type
        [codec.packb({"t": ["unhashable"]})],
        [codec.packb({"t": {"a": 1}})],
        [codec.packb({"no": "type"})],
        [b"\xc1"],                                     # reserved msgpack byte
        [b"\x91" * 5000 + b"\xc0"],                    # nesting beyond msgpack's stack
        [codec.packb({"t": "hello"})[:-1] + b"\xa1\xff"],  # invalid utf-8
    ]
    for frames in cases:
        name, text = door_error(zctx, bad_pool.address, frames)
        assert name == "ProtocolError", (frames[0][:40], name, text)
    bystander.check()


def test_front_door_survives_deeply_nested_extensions(bad_pool, bystander, zctx):
    data = b"\x90"
    for _ in range(3000):  # used to overflow the C stack of the pool's process
        data = b"\x91\xc9" + len(data).to_bytes(4, "big") + bytes([codec.EXT_TUPLE]) + data
    name, _ = door_error(zctx, bad_pool.address, [data])
    assert name == "ProtocolError"
    bystander.check()


def test_front_door_drops_a_peer_whose_request_is_too_large(bad_pool, bystander, zctx):
    """A request beyond MAX_REQUEST_BYTES is never read, let alone held: libzmq drops the
    peer that sent it; the front door answers others as before."""
    sock = zctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(bad_pool.address)
    sock.send(codec.packb({"t": "ping", "pad": b"x" * (MAX_REQUEST_BYTES + 1)}))
    assert not sock.poll(1000)   # (no answer: the peer was dropped)
    sock.close()
    assert door_request(zctx, bad_pool.address, {"t": "ping"})["ok"]
    bystander.check()


REFUSED = ("AuthenticationError", "SignInThrottledError")


def test_wrong_token(bad_pool, bystander, zctx):
    with pytest.raises(kernelproxy.AuthenticationError):
        kernelproxy.connect(bad_pool.address, "not-the-token")
    for token in (None, 5, b"bytes", "", bad_pool.token + "x", bad_pool.token[:-1]):
        msg = {"t": "hello", "v": PROTOCOL_VERSION, "user": "x"}
        if token is not None:
            msg["token"] = token
        # (wrong tokens in a row from one address: the later ones are told to wait first)
        assert door_error(zctx, bad_pool.address, [codec.packb(msg)])[0] in REFUSED
        assert door_error(zctx, bad_pool.address,
                          [codec.packb({"t": "status", "token": token})])[0] in REFUSED
    with pytest.raises(AuthenticationError):
        door_request(zctx, bad_pool.address, {"t": "status", "token": "wrong"})
    bystander.check()


def test_wrong_protocol_version(bad_pool, bystander, zctx):
    for version in (999, 0, -1, "1", None, [1], 1.5, 1.0, True, PROTOCOL_VERSION + 1):
        msg = {"t": "hello", "v": version, "token": bad_pool.token}
        name, text = door_error(zctx, bad_pool.address, [codec.packb(msg)])
        assert name == "VersionMismatchError", (version, name, text)
    with pytest.raises(VersionMismatchError):
        door_request(zctx, bad_pool.address, {"t": "hello", "v": 999, "token": bad_pool.token})
    bystander.check()


def test_heartbeat_and_close_with_a_wrong_key_change_nothing(bad_pool, bystander, victim, zctx):
    for key in (b"", b"\0" * 32, victim.key[:-1], "text", None):
        for kind in ("hb", "close"):
            reply = codec.unpackb(raw_request(zctx, bad_pool.address, [codec.packb(
                {"t": kind, "session": victim.id, "key": key})])[0])
            assert reply["ok"] is True and reply.get("alive", False) is False
    assert int(module_for(victim).arange(4).sum()) == 6  # still open
    assert any(s["session"] == victim.id for s in victim.status()["sessions"])
    bystander.check()


# ------------------------------------------------------------------ a worker's port

def unix_peer_dropped(address: str, frames: list[bytes], timeout: float = REPLY_TIMEOUT) -> bool:
    """Whether a Unix worker closes a connection whose first message is *frames* (not the
    session's key) without answering it."""
    link = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        link.connect(address[len("unix://"):])
        try:
            framing.send_all(link, frames)
        except OSError:   # it hung up while we wrote: dropped
            return True
        assert select.select([link], [], [], timeout)[0], f"no answer from {address}"
        try:
            return link.recv(1) == b""
        except ConnectionResetError:
            return True
    finally:
        link.close()


def test_worker_port_garbage_without_the_key(bad_pool, bystander, victim, zctx):
    address = victim.worker_address
    unix = address.startswith("unix://")
    key = victim.key if unix else None   # (a Unix peer's first message proves the key)
    for frames in [[g] for g in garbage(2)] + [[b""], [b"", b""], [b"\xc1", b"x"]]:
        if unix:   # a peer that does not open with the key gets nothing, and is dropped
            assert unix_peer_dropped(address, frames)
        reply = worker_reply(zctx, address, frames, key=key)
        assert reply["e"][1] in ("ProtocolError", "AuthenticationError"), reply["e"]
    for header in ({}, {"k": b"wrong"}, {"k": "text"}, {"k": None}, {"k": victim.key[:-1]},
                   {"k": b"", "b": 1}, {"k": b"\0" * 32, "t": "close"}):
        for rest in ([], [b"payload"]):
            reply = worker_reply(zctx, address, [codec.packb(header) + b"\x01\x02", *rest], key=key)
            assert reply["e"][1] == "AuthenticationError", (header, reply["e"])
    for frames in ([codec.packb([1, 2])], [codec.packb("header")], [codec.packb(5)]):
        assert worker_reply(zctx, address, frames, key=key)["e"][1] == "ProtocolError"
    if unix:   # the key message itself, wrong
        for wrong in ({"t": "auth", "k": b"wrong"}, {"t": "auth"}, {"k": victim.key},
                      {"t": "auth", "k": victim.key, "x": "y" * 5000}):
            assert unix_peer_dropped(address, [codec.packb(wrong)])
    assert int(module_for(victim).arange(4).sum()) == 6  # the victim itself is fine
    bystander.check()


def _batch_header(session, batch: int = 10**6, resume: int | None = None) -> bytes:
    return codec.packb({"k": session.key, "b": batch, "n": 1, "r": resume})


def test_worker_port_garbage_with_the_key(bad_pool, bystander, victim, zctx):
    """Garbage in place of op records (never a bare int: that frees a handle)."""
    cp = module_for(victim)
    mine = cp.arange(6.0)
    victim.sync()
    rnd = random.Random(3)
    blobs = []
    while len(blobs) < 12:
        blob = rnd.randbytes(rnd.choice([1, 3, 16, 200, 5000]))
        try:
            first = msgpack.Unpacker(raw=False, strict_map_key=False)
            first.feed(blob)
            if type(first.unpack()) is int:  # a bare int frees a handle: not garbage
                continue
        except Exception:  # undecodable: exactly the garbage wanted
            pass
        blobs.append(blob)
    for blob in blobs:
        reply = worker_reply(zctx, victim.worker_address, [_batch_header(victim) + blob],
                             key=victim.key)
        assert reply["e"] is not None and reply["e"][1] == "ProtocolError", reply["e"]
        assert reply["e"][0] is None  # no op of the client's was named
        np.testing.assert_array_equal(mine.get(), np.arange(6.0))
    bystander.check()


MALFORMED_RECORDS = {
    "str": codec.packb("x"),
    "float": codec.packb(1.5),
    "map": codec.packb({"a": 1}),
    "nil": codec.packb(None),
    "empty list": codec.packb([]),
    "4 fields": codec.packb([1, "f", "a", 1]),
    "6 fields": codec.packb([1, "f", "a", 1, "zeros", None]),
    "reserved byte": b"\xc1",
    "truncated head": codec.packb([7, "f", "a", 99, "zeros"])[:-2],
    "bad utf-8": b"\x95\x07\xa1\xff",
    "bad extension": b"\x95\xc7\x00\x63\xa1f\xa1a\x01\xa5zeros",
    "arguments not a list": codec.packb([None, "f", "a", 5, "zeros"]) + codec.packb("x"),
    "arguments, 4 fields": codec.packb([None, "f", "a", 5, "zeros"]) + codec.packb(
        [None, [], {}, 1]),
    "args not a list": codec.packb([None, "f", "a", 5, "zeros"]) + codec.packb([None, {}, {}]),
    "kwargs not a map": codec.packb([None, "f", "a", 5, "zeros"]) + codec.packb([None, [], []]),
    "arguments missing": codec.packb([None, "f", "a", 5, "zeros"]),
}


@pytest.mark.parametrize("record", MALFORMED_RECORDS.values(), ids=MALFORMED_RECORDS.keys())
def test_malformed_op_record(bad_pool, bystander, victim, zctx, record):
    cp = module_for(victim)
    mine = cp.arange(6.0)
    victim.sync()
    reply = worker_reply(zctx, victim.worker_address, [_batch_header(victim) + record],
                         key=victim.key)
    assert reply["b"] == 10**6
    assert reply["e"] is not None and reply["e"][1] == "ProtocolError", reply["e"]
    # the session's own next batch runs: an error no client op caused poisons nothing
    np.testing.assert_array_equal((mine * 2).get(), np.arange(6.0) * 2)
    bystander.check()


def test_malformed_op_arguments_are_a_protocol_error(bad_pool, bystander, victim):
    """Through the session itself: the error is raised, then the session goes on."""
    cp = module_for(victim)
    for kwargs in (["x"], "x", 5):
        victim.submit(m.KIND_FUNCTION, api.ARRAY, victim.new_id(), "zeros", None, (3,), kwargs)
        with pytest.raises(ProtocolError):
            victim.sync()
        assert int(cp.arange(4).sum()) == 6
    bystander.check()


def test_batch_frames_truncated_or_missing(bad_pool, bystander, victim, zctx):
    cp = module_for(victim)
    mine = cp.arange(3.0)
    victim.sync()
    header = _batch_header(victim, resume=1)  # each acknowledges the error before it
    upload = codec.packb([1, m.KIND_UPLOAD, api.ARRAY, 10**5, "<f8"]) + codec.packb(
        [None, [[4]], {}])
    cases = [
        [header[:-1]],                          # the header itself is cut
        [header + upload],                      # an upload without its data frame
        [header + upload, b"\0" * 31],          # data frame one byte short
        [header + upload, b"\0" * 33],          # and one byte long
        [header + upload[:-3], b"\0" * 32],     # the op record is cut
    ]
    for frames in cases:
        reply = worker_reply(zctx, victim.worker_address, frames, key=victim.key)
        assert reply["e"] is not None and reply["e"][1] == "ProtocolError", reply["e"]
    # acknowledge the last error (of op 1, which the session never sent), then carry on
    assert worker_reply(zctx, victim.worker_address, [header], key=victim.key)["e"] is None
    np.testing.assert_array_equal(mine.get(), np.arange(3.0))
    bystander.check()


# ------------------------------------------------------------------ ops the pool refuses

def test_unknown_op_kind(bad_pool, bystander, victim):
    cp = module_for(victim)
    x = cp.arange(4.0)
    for kind in ("z", "", "ff", 5, None, ["f"]):
        victim.submit(kind, api.ARRAY, victim.new_id(), "add", None, (x, x), {})
        with pytest.raises(ProtocolError, match="op kind"):
            victim.sync()
        np.testing.assert_array_equal((x + 1).get(), np.arange(4.0) + 1)
    bystander.check()


DISALLOWED = [
    (m.KIND_FUNCTION, "load", False, ("/etc/passwd",)),
    (m.KIND_FUNCTION, "save", False, ("/tmp/gpuwb-should-not-exist", "TARGET")),
    (m.KIND_FUNCTION, "fromfile", False, ("/etc/passwd",)),
    (m.KIND_FUNCTION, "__import__", False, ("os",)),
    (m.KIND_FUNCTION, "linalg.__builtins__", False, ()),
    (m.KIND_FUNCTION, "memmap", False, ("/etc/passwd",)),
    (m.KIND_METHOD, "tofile", True, ("/tmp/gpuwb-should-not-exist",)),
    (m.KIND_METHOD, "__reduce__", True, ()),
    (m.KIND_METHOD, "__class__", True, ()),
    (m.KIND_ATTRIBUTE, "ctypes", True, ()),
    (m.KIND_ATTRIBUTE, "__dict__", True, ()),
    (m.KIND_OPERATOR, "__add__", False, ("TARGET", "TARGET")),
    (m.KIND_OPERATOR, "attrgetter", False, ("__class__",)),
    (m.KIND_OPERATOR, "call", False, ("TARGET",)),
]


@pytest.mark.parametrize("kind,name,on_target,args", DISALLOWED,
                         ids=[f"{k}:{n}" for k, n, _, _ in DISALLOWED])
def test_disallowed_names(bad_pool, bystander, victim, kind, name, on_target, args):
    cp = module_for(victim)
    x = cp.arange(5.0)
    args = tuple(x if a == "TARGET" else a for a in args)
    victim.submit(kind, api.ARRAY, victim.new_id(), name, x if on_target else None, args, {})
    with pytest.raises(NotAllowedError):
        victim.sync()
    assert not os.path.exists("/tmp/gpuwb-should-not-exist")
    # the next batch acknowledges the error: the session keeps working
    y = cp.arange(5.0) * 3
    np.testing.assert_array_equal(y.get(), np.arange(5.0) * 3)
    np.testing.assert_array_equal(x.get(), np.arange(5.0))
    bystander.check()


def test_handle_of_another_session(bad_pool, bystander, victim):
    a_cp = module_for(bystander.session)
    a_arrays = [a_cp.full(3, float(i)) for i in range(10)]
    bystander.session.sync()
    theirs = a_arrays[-1]._h
    b_cp = module_for(victim)
    own = b_cp.ones(2)
    victim.sync()
    assert own._h < theirs  # the id names nothing in B's own table (ids count up from 1)
    foreign = wrap(victim, theirs)
    with pytest.raises(InvalidHandleError):
        b_cp.negative(foreign).get()
    with pytest.raises(InvalidHandleError):
        victim.submit(m.KIND_DOWNLOAD, api.NONE, None, None, foreign)
        victim.sync()
    with pytest.raises(InvalidHandleError):
        victim.submit(m.KIND_FUNCTION, api.ARRAY, victim.new_id(), "add", None,
                      ((foreign, own), own), {})  # inside a tuple, too
        victim.sync()
    np.testing.assert_array_equal((own * 5).get(), np.full(2, 5.0))
    del foreign
    victim.sync()
    for i, arr in enumerate(a_arrays):  # A's arrays are untouched
        np.testing.assert_array_equal(arr.get(), np.full(3, float(i)))
    bystander.check()


# ------------------------------------------------------------------ memory

def test_session_over_its_memory_limit(bad_pool, bystander):
    with kernelproxy.connect(bad_pool.address, bad_pool.token, memory_limit=16 * MB) as s:
        cp = module_for(s)
        assert s.memory_limit == 16 * MB
        assert cp.cuda.memory.OutOfMemoryError is kernelproxy.OutOfMemoryError
        assert issubclass(kernelproxy.OutOfMemoryError, MemoryError)
        with pytest.raises(cp.cuda.memory.OutOfMemoryError):
            cp.zeros(4 * MB, dtype=cp.float64).sum().get()  # 32 MB
        with pytest.raises(kernelproxy.OutOfMemoryError):
            cp.asarray(np.ones(4 * MB))  # 32 MB uploaded
            s.sync()
        base = cp.ones(MB, dtype=cp.float64)  # 8 MB
        s.sync()
        with pytest.raises(kernelproxy.OutOfMemoryError):
            (base + base + base).get()  # the results do not fit next to it
        small = cp.ones(512 * 1024, dtype=cp.float64)  # 4 MB still fits
        assert float(small.sum()) == 512 * 1024
        np.testing.assert_array_equal(base[:3].get(), np.ones(3))
        del base, small
        again = cp.zeros(int(1.5 * MB), dtype=cp.float64)  # 12 MB once the rest is freed
        assert float(again.sum()) == 0.0
    module_for(bystander.session)
    bystander.check()


def test_non_numeric_arrays_are_refused_by_the_worker(bad_pool, bystander, victim):
    """dtype strings and Python data that make str/object/datetime arrays on the device."""
    cp = module_for(victim)
    cases = [
        lambda: cp.zeros(3, dtype="M8[s]"),
        lambda: cp.zeros(3, dtype="U5"),
        lambda: cp.zeros(3, dtype="O"),
        lambda: cp.array(["a", "b"]),
        lambda: cp.full(2, "x"),
        lambda: cp.arange(3.0).astype("m8[s]"),
    ]
    for make in cases:
        with pytest.raises(ValueError, match="Unsupported dtype"):   # CuPy's refusal
            make().tolist()
        assert int(cp.arange(4).sum()) == 6
    bystander.check()


def test_unencodable_value_does_not_kill_the_worker(bad_pool, bystander, victim):
    """A result the codec cannot send is an error of that op, not a dead worker."""
    cp = module_for(victim)
    x = cp.arange(3.0)
    seq = victim.submit(m.KIND_FUNCTION, api.VALUE, None, "array", None, (["a", "b"],), {})
    with pytest.raises(ValueError, match="Unsupported dtype"):
        victim.value(seq)
    np.testing.assert_array_equal((x + 1).get(), np.arange(3.0) + 1)
    bystander.check()


# ------------------------------------------------------------------ a client killed mid-batch

KILLED_CLIENT = textwrap.dedent("""
    import sys, time
    import numpy as np, zmq
    import kernelproxy
    from gpu_backend.protocol import api, codec, framing
    from gpu_backend.protocol import messages as m
    from kernelproxy import links
    from kernelproxy.modules import module_for

    s = kernelproxy.connect(sys.argv[1], sys.argv[2])
    cp = module_for(s)
    a = cp.asarray(np.ones(1 << 19))          # 4 MB uploaded
    b = a * 2                                 # 4 MB more
    s.sync()
    # a batch whose first frame is sent and whose data frame never is
    record = (codec.packb([s._seq + 1, m.KIND_UPLOAD, api.ARRAY, 999, "<f8"])
              + codec.packb([None, [[1 << 20]], {}]))
    frames = [codec.packb({"k": s.key, "b": s._batch + 1, "n": 1, "r": None}) + record,
              np.ones(1 << 19).tobytes()]
    print(s.id, flush=True)
    sys.stdin.readline()   # (once the test has seen the session's memory in the status)
    if isinstance(s.link, links.ZmqLink):   # the first frame, and part of the data
        s.link.sock.send(frames[0], zmq.SNDMORE)
        s.link.sock.send(frames[1], zmq.SNDMORE)
    else:                                   # the message's head and half its bytes
        wire = b"".join(bytes(v) for v in framing.message_views(frames))
        s.link.sock.sendall(wire[:len(wire) // 2])
    print("sent", flush=True)
    time.sleep(120)
""")


def _worker_of(pool: LocalPool, sid: str):
    """The worker process of session *sid* (the pool's front door runs in this process)."""
    for _ in range(100):
        try:
            workers = list(pool.door.host.workers.values())
            break
        except RuntimeError:  # the door's thread changed the dict meanwhile
            continue
    for worker in workers:
        if worker.session is not None and worker.session.sid == sid:
            return worker.process
    return None


def test_client_killed_mid_batch(bad_pool, bystander):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", KILLED_CLIENT, bad_pool.address,
                              bad_pool.token], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=env, cwd=ROOT)
    try:
        sid = child.stdout.readline().strip()
        assert sid, "the client did not start"
        status = bystander.session.status

        def its_usage():
            for s in status()["sessions"]:
                if s["session"] == sid and s["memory_used"] >= 8 * MB:
                    return s
            return None

        wait_for(its_usage, 10, "the killed client's memory to show in the status")
        process = _worker_of(bad_pool, sid)
        assert process is not None and process.poll() is None
        child.stdin.write("go\n")   # now the half-sent batch, and the kill
        child.stdin.flush()
        assert child.stdout.readline().strip() == "sent"
        child.send_signal(signal.SIGKILL)
        child.wait(10)

        def gone():
            return all(s["session"] != sid for s in status()["sessions"])

        wait_for(gone, LEASE + 5, "the session to leave the status")
        # its worker saw the client's connection end with its process, before any lease
        ended = next(e for e in status()["ended"] if e["session"] == sid)
        assert ended["reason"] == CLIENT_GONE, ended
        wait_for(lambda: process.poll() is not None, 10, "its worker process to exit")
        after = status()
        assert after["devices"][0]["memory_used"] == sum(
            s["memory_used"] for s in after["sessions"])
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
    bystander.check()
