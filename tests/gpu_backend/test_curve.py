"""CurveZMQ: key files, pinning, clear refusals, and nothing readable on the wire.

Real pools (``LocalPool(devices="cpu", key_file=...)``: a key file makes the pool
encrypt on loopback too), real worker processes, real sockets. The wire tests put
a TCP forwarder on 127.0.0.2 between the client and the pool (front door and the
session's worker) that records every byte both ways.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zmq

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol.errors import AuthenticationError
from gpu_backend.security import (InsecureListenError, generate_keypair, is_loopback, known_pool_key,
                                  load_public_key, load_server_keys)
from kernelproxy.modules import module_for
from workbench.connection import Workbench
from workbench.kernelspec import kernel_json

LEASE = 1.0
#: a refusal must come at once, not after the ping's 5 s timeout
REFUSED_WITHIN = 3.0


@pytest.fixture(autouse=True)
def no_known_pools(tmp_path, monkeypatch):
    """Each test's own known-pools file (absent unless the test writes it)."""
    path = tmp_path / "known_pools"
    monkeypatch.setenv("GPUWB_KNOWN_POOLS", str(path))
    for name in ("GPUWB_SERVER_KEY", "GPUWB_SERVER_KEY_FILE", "GPUWB_KEY_FILE", "GPUWB_POOL"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """A pool key pair whose public key begins with "-" (Z85 has it; one key in 85), so that
    every test that passes the key as a word also checks it is read as a value."""
    path = tmp_path_factory.mktemp("keys") / "pool.key"
    for _ in range(5000):
        secret, public_file, public = generate_keypair(path, force=True)
        if public.startswith(b"-"):
            return secret, public_file, public
    raise AssertionError("no key beginning with '-' in 5000 tries")


@pytest.fixture(scope="module")
def curve_pool(keys):
    with LocalPool(devices="cpu", key_file=keys[0], lease_timeout=LEASE) as pool:
        yield pool


@pytest.fixture(scope="module")
def plain_pool():
    with LocalPool(devices="cpu", lease_timeout=LEASE) as pool:
        yield pool


def refused(address, token, **kwargs) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(AuthenticationError) as info:
        kernelproxy.connect(address, token, **kwargs)
    return str(info.value), time.monotonic() - started


# ------------------------------------------------------------------ key files

def test_keys_command_writes_the_pair(tmp_path):
    out = tmp_path / "keys" / "pool.key"
    cmd = [sys.executable, "-m", "gpu_backend.cli", "keys", "--out", str(out)]
    made = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    pub = out.with_name("pool.key.pub")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    public = pub.read_text().strip()
    assert pub.read_text() == public + "\n" and len(public) == 40
    keys = load_server_keys(out)
    assert keys.public.decode() == public and zmq.curve_public(keys.secret) == keys.public
    assert f"public key: {public}" in made.stdout and str(out) in made.stdout and str(pub) in made.stdout
    assert "public-key" in out.read_text() and "secret-key" in out.read_text()

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "--force" in again.stderr
    assert pub.read_text().strip() == public                      # kept
    forced = subprocess.run(cmd + ["--force"], capture_output=True, text=True, timeout=60)
    assert forced.returncode == 0, forced.stderr
    assert pub.read_text().strip() != public
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_key_parsing(keys, tmp_path):
    secret, public_file, public = keys
    assert load_public_key(public_file) == public
    assert load_public_key(str(public_file)) == public
    assert load_public_key(public.decode()) == public
    assert load_public_key(public) == public
    for bad in ("not-a-key", str(tmp_path / "missing.pub"), str(secret)):
        with pytest.raises(ValueError):
            load_public_key(bad)
    mismatched = tmp_path / "mismatched.key"
    other_public, _ = zmq.curve_keypair()
    text = secret.read_text()
    mismatched.write_text(text.replace(public.decode(), other_public.decode()))
    with pytest.raises(ValueError, match="does not belong"):
        load_server_keys(mismatched)
    assert [is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]")] == [True] * 5
    assert not any(is_loopback(h) for h in ("0.0.0.0", "*", "10.1.2.3", "gpu-host", "eth0", "::"))


# ------------------------------------------------------------------ pool start-up

def test_no_key_off_loopback_refuses_to_start_before_binding():
    with socket.socket() as probe:   # a free port
        probe.bind(("0.0.0.0", 0))
        port = probe.getsockname()[1]
    pool = LocalPool(devices="cpu", listen=f"tcp://0.0.0.0:{port}")
    with pytest.raises(InsecureListenError) as info:
        pool.start()
    text = str(info.value)
    assert "gpuwb-backend keys --out FILE" in text and "--key-file" in text
    assert pool.door is None
    with socket.socket() as probe:   # nothing took the port (bound only, never listening)
        probe.bind(("0.0.0.0", port))

    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUWB_")}
    served = subprocess.run([sys.executable, "-m", "gpu_backend.cli", "serve", "--listen",
                             "tcp://0.0.0.0:0", "--devices", "cpu"],
                            capture_output=True, text=True, timeout=60, env=env)
    assert served.returncode == 2 and "gpuwb-backend keys --out FILE" in served.stderr


# ------------------------------------------------------------------ connecting

def test_pinned_key_round_trips_arrays(curve_pool, keys):
    _, public_file, public = keys
    for pinned in (public_file, public.decode()):
        with kernelproxy.connect(curve_pool.address, curve_pool.token, server_key=pinned) as s:
            assert s.server_key == public
            cp = module_for(s)
            host = np.arange(50_000, dtype=np.float64)
            x = cp.asarray(host)
            np.testing.assert_array_equal((x * 2).get(), host * 2)
            assert float(x.sum()) == host.sum()
            assert s.status()["sessions"]                     # a door request, encrypted
    # heartbeats go over CURVE too: the lease outlives several lease timeouts
    with kernelproxy.connect(curve_pool.address, curve_pool.token, server_key=public) as s:
        x = module_for(s).ones(3)
        time.sleep(LEASE * 2)
        assert not s.heartbeat.lost
        assert float(x.sum()) == 3.0


def test_wrong_token_is_still_the_tokens_error(curve_pool, keys):
    with pytest.raises(AuthenticationError, match="token"):
        kernelproxy.connect(curve_pool.address, "wrong", server_key=keys[2])


def test_no_key_is_refused_clearly(curve_pool):
    text, took = refused(curve_pool.address, curve_pool.token)
    assert took < REFUSED_WITHIN
    assert f"the pool at {curve_pool.address}" in text and "requires encryption" in text
    assert "server_key" in text and "GPUWB_SERVER_KEY" in text and "known_pools" in text


def test_wrong_key_is_refused(curve_pool):
    wrong, _ = zmq.curve_keypair()
    text, took = refused(curve_pool.address, curve_pool.token, server_key=wrong)
    assert took < REFUSED_WITHIN
    assert "did not prove the pinned key" in text and "refusing it" in text


def test_key_pinned_for_a_plain_pool_is_refused(plain_pool, keys):
    text, took = refused(plain_pool.address, plain_pool.token, server_key=keys[1])
    assert took < REFUSED_WITHIN
    assert "does not use encryption, but a key is pinned for it" in text


def test_known_pools_pin_by_address(curve_pool, keys, no_known_pools):
    public = keys[2].decode()
    other, _ = zmq.curve_keypair()
    no_known_pools.write_text(
        "# pools I trust\n\n"
        f"tcp://elsewhere:5555 {other.decode()}\n"
        f"{curve_pool.address} {public}\n")
    assert known_pool_key(curve_pool.address) == keys[2]
    assert known_pool_key("tcp://127.0.0.1:1") is None
    with kernelproxy.connect(curve_pool.address, curve_pool.token) as s:
        assert s.server_key == keys[2]
        assert float(module_for(s).arange(4).sum()) == 6.0

    no_known_pools.write_text(f"{curve_pool.address} {other.decode()}\n")   # the pool "changed"
    text, _ = refused(curve_pool.address, curve_pool.token)
    assert "did not prove the pinned key" in text

    no_known_pools.write_text(f"{curve_pool.address}\n")
    with pytest.raises(ValueError, match="line 1"):
        kernelproxy.connect(curve_pool.address, curve_pool.token)


def test_workbench_takes_the_key_from_its_settings(curve_pool, keys, monkeypatch):
    monkeypatch.setenv("GPUWB_POOL", curve_pool.address)
    monkeypatch.setenv("GPUWB_TOKEN", curve_pool.token)
    monkeypatch.setenv("GPUWB_SERVER_KEY_FILE", str(keys[1]))
    bench = Workbench()
    try:
        assert bench.connect().server_key == keys[2]
        assert bench.reconnect().server_key == keys[2]
    finally:
        bench.disconnect()


def test_gpuwb_status_and_kernelspec_pass_the_key(curve_pool, keys, tmp_path):
    token = tmp_path / "token"
    token.write_text(curve_pool.token)
    gpuwb = [sys.executable, "-m", "workbench.cli", "status", "--pool", curve_pool.address,
             "--token-file", str(token)]
    for pinned in (str(keys[1]), keys[2].decode()):  # the .pub file, the key itself
        ok = subprocess.run(gpuwb + ["--server-key", pinned, "--json"], capture_output=True,
                            text=True, timeout=60)
        assert ok.returncode == 0, ok.stderr
        assert '"devices"' in ok.stdout
    plain = subprocess.run(gpuwb, capture_output=True, text=True, timeout=60)
    assert plain.returncode == 1 and "requires encryption" in plain.stderr

    env = kernel_json(pool="tcp://gpu-host:5555", server_key=keys[2].decode())["env"]
    assert env["GPUWB_SERVER_KEY"] == keys[2].decode()
    env = kernel_json(pool="tcp://gpu-host:5555", server_key=str(keys[1]))["env"]
    assert env["GPUWB_SERVER_KEY_FILE"] == str(keys[1].resolve())


# ------------------------------------------------------------------ the wire

class Sniffer:
    """A TCP forwarder from 127.0.0.2:PORT to 127.0.0.1:PORT that records every byte,
    each direction of each connection as its own stream."""

    def __init__(self) -> None:
        self.streams: list[bytearray] = []
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def _start(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def forward(self, port: int) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.2", port))
        listener.listen()
        self._sockets.append(listener)
        self._start(self._accept, listener, port)

    def _accept(self, listener: socket.socket, port: int) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._closed:   # (accepted as close() shut the listener: not forwarded)
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                stream = bytearray()
                self.streams.append(stream)
                self._start(self._pump, source, sink, stream)

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, stream: bytearray) -> None:
        try:
            while data := source.recv(1 << 16):
                stream += data
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def seen(self, needle: bytes) -> bool:
        return any(needle in bytes(stream) for stream in self.streams)

    def close(self) -> None:
        """Shut every socket down (which wakes a thread blocked in its accept or recv), wait
        for the threads, then close: a thread that used a socket closed under it used its
        number, which another thread's next descriptor (libzmq's, say) may have by then."""
        with self._lock:
            self._closed = True
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:   # (not connected)
                pass
        for thread in threads:
            thread.join(10)
        for sock in sockets:
            sock.close()


def _ready_spares(pool: LocalPool) -> list[int]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ports = [w.port for w in list(pool.door.host.workers.values())
                 if w.port is not None and w.session is None]
        if ports:
            return ports
        time.sleep(0.05)
    raise AssertionError("no warm worker")


@pytest.mark.parametrize("encrypted", [True, False], ids=["curve", "plain"])
def test_nothing_readable_on_the_wire(encrypted, curve_pool, plain_pool, keys):
    pool = curve_pool if encrypted else plain_pool
    door_port = int(pool.tcp_address.rsplit(":", 1)[1])
    sniffer = Sniffer()
    try:
        try:
            sniffer.forward(door_port)
        except OSError as exc:
            pytest.skip(f"cannot listen on 127.0.0.2 here: {exc}")
        for port in _ready_spares(pool):      # the session will get one of these workers
            sniffer.forward(port)
        host = np.random.default_rng(7).random(8192)           # 64 KiB nobody else sends
        address = f"tcp://127.0.0.2:{door_port}"
        with kernelproxy.connect(address, pool.token,
                                 server_key=keys[1] if encrypted else None) as s:
            assert s.worker_address.startswith("tcp://127.0.0.2:")   # through the sniffer
            session_key = s.key
            x = module_for(s).asarray(host)
            np.testing.assert_array_equal(x.get(), host)
    finally:
        sniffer.close()
    assert sum(map(len, sniffer.streams)) > 2 * host.nbytes   # it saw the upload and download
    secrets = {"token": pool.token.encode(), "session key": session_key,
               "array bytes": host.tobytes()[4096:8192]}
    found = {name: sniffer.seen(needle) for name, needle in secrets.items()}
    assert found == {name: not encrypted for name in secrets}
