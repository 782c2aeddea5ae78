"""Issue 52: a notebook waiting at its op sees why. The worker tells a client that reads
notices (its batches' header ``p``: a session with a progress factory) what a batch waits
for before its ops run, its swap-in or room on the device, and the session shows it
through its ``progress`` factory, the one transfers use; a client that does not say it
reads them (an older one, or plain Python without a display) gets none and works.

A real pool on the NumPy device (on a GPU with ``GPUWB_TEST_DEVICES=0``), real workers.
The display is workbench's NotebookProgress with ``show_after=0``, so every notice shows
whatever the host's speed (in a notebook only a wait past a second would); what it would
have displayed is recorded instead of sent to Jupyter. Nothing is timed."""

from __future__ import annotations

import numpy as np
import pytest
import zmq

import kernelproxy
from gpu_backend.pool import LocalPool
from gpu_backend.protocol import codec
from kernelproxy.modules import module_for
from kernelproxy.wait_displays import WAIT_LABELS
from tests.differential import TEST_DEVICES
from tests.gpu_backend.bad_input_rig import raw_request
from tests.gpu_backend.test_swap import IDLE, _idle_for, _row, _wait
from workbench.progress import NotebookProgress

MIB = 1 << 20


class _Display:
    """Where a shown progress goes: its texts, in order (Jupyter's display handle's place)."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def update(self, bundle: dict, raw: bool = False) -> None:
        self.texts.append(bundle["text/plain"])


class Shown(NotebookProgress):
    """NotebookProgress shown from the first notice on; its displays recorded."""

    def __init__(self, made: list, label: str, total: int) -> None:
        super().__init__(label, total, show_after=0)
        self.texts: list[str] = []
        made.append(self)

    def _show(self, bundle: dict) -> None:
        if self._handle is None:
            self._handle = _Display(self.texts)
        self._handle.update(bundle, raw=True)


def _factory(made: list):
    return lambda label, total: Shown(made, label, total)


@pytest.mark.parametrize("tier", ["file", "host"])
def test_a_swapped_sessions_next_op_shows_its_swap_in(tmp_path, tier):
    with LocalPool(devices=TEST_DEVICES, swap_idle=IDLE, swap_dir=tmp_path / "swap",
                   lease_timeout=30, memory_limit=512 << 20,
                   swap_host_memory=0 if tier == "file" else 1 << 30) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        made: list[Shown] = []
        s.progress = _factory(made)
        try:
            cp = module_for(s)
            # three allocations, past the file tier's 64 MiB reads: several steps back
            host = [np.random.default_rng(i).integers(0, 2**63, n * MIB // 8, dtype=np.int64)
                    for i, n in enumerate((80, 40, 8))]
            xs = [cp.asarray(h) for h in host]
            s.sync()
            # (the session idles only IDLE between two ops: it may go out and come back
            # while the uploads are made, or between the downloads below, on a slow or loaded
            # machine; each return shows as the one looked at here does)
            swapped = _wait(lambda: _row(s)["swapped"], "the idle session's swap-out")
            if tier == "host":
                assert _row(s)["swapped_host"] == swapped
            before = len(made)

            assert [x.get().tobytes() for x in xs] == [h.tobytes() for h in host]   # the wait
            waits = [p for p in made[before:] if p.label == WAIT_LABELS["swap_in"]]
            assert waits and waits[0] is made[before], made
            assert waits[0].total == swapped
            for shown in waits:
                first, *_, last_text, blank = shown.texts
                assert first.startswith(f"{WAIT_LABELS['swap_in']}: 0 B of ")
                assert last_text.startswith(f"{WAIT_LABELS['swap_in']}: ")
                assert "(100%)" in last_text
                assert blank == ""   # closed: the display blanked
            assert len(s._waits) == 0
        finally:
            s.close()


def test_an_op_waiting_for_room_on_the_device_shows_it(tmp_path):
    from gpu_backend.door.swap_pressure import PRESSURE_IDLE

    with LocalPool(devices="cpu", numpy_device_memory=64 * MIB, memory_limit=48 * MIB,
                   swap_idle=None, swap_dir=tmp_path / "swap", lease_timeout=60) as pool:
        a = kernelproxy.connect(pool.address, pool.token)
        b = kernelproxy.connect(pool.address, pool.token)
        made: list[Shown] = []
        b.progress = _factory(made)
        try:
            xa = module_for(a).arange(5 * MIB, dtype=np.float64)        # 40 MiB of the 64
            float(xa.sum())
            _idle_for(a, PRESSURE_IDLE + 0.2)
            xb = module_for(b).ones(5 * MIB, dtype=np.float64)   # 40 more: b waits for room
            assert float(xb.sum()) == 5 * MIB
            assert _wait(lambda: _row(a)["swapped"], "a's swap-out") >= 40 * MIB

            assert [p.label for p in made] == [WAIT_LABELS["room"]]
            shown = made[0]
            assert 0 < shown.total <= 40 * MIB   # (the bytes it was short)
            assert shown.texts[0].startswith(f"{WAIT_LABELS['room']}: 0 B of ")
            assert "(100%)" in shown.texts[-2]   # a's swap-out freed what it needed
            assert shown.texts[-1] == ""
            assert len(b._waits) == 0
        finally:
            a.close()
            b.close()


def test_a_client_that_does_not_read_notices_gets_none_and_works(tmp_path):
    """An older client (a batch header without ``p``, here sent raw on the session's own
    key) is answered with its reply as ever, the swap-in before it silent; so is a session
    without a progress factory (plain Python)."""
    with LocalPool(devices=TEST_DEVICES, swap_idle=IDLE, swap_dir=tmp_path / "swap",
                   lease_timeout=30, memory_limit=256 << 20, swap_host_memory=0) as pool:
        s = kernelproxy.connect(pool.address, pool.token)
        ctx = zmq.Context()
        try:
            assert s.progress is None
            cp = module_for(s)
            host = np.arange(8 * MIB // 8, dtype=np.float64)
            x = cp.asarray(host)
            s.sync()

            _wait(lambda: _row(s)["swapped"], "the swap-out")
            frames = raw_request(ctx, s.worker_address,
                                 [codec.packb({"k": s.key, "b": 1000, "n": 0, "r": None})],
                                 key=s.key)
            reply = codec.unpackb(frames[0])
            assert "notice" not in reply and reply["b"] == 1000 and reply["e"] is None
            _wait(lambda: _row(s)["swapped"] == 0, "the pool to hear of the swap-in")

            _wait(lambda: _row(s)["swapped"], "the next swap-out")
            assert x.get().tobytes() == host.tobytes()   # (a session without a display)
            assert len(s._waits) == 0
        finally:
            ctx.destroy(linger=0)
            s.close()
