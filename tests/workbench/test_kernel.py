"""The "Python 3 (remote GPU)" kernel, started from its installed kernelspec."""

import os
import tempfile
import time

import jupyter_kernel_test as jkt
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_kernel_test.msgspec_v5 import validate_message

from gpu_backend.pool import LocalPool
from tests.ipc_kernels import ipc_kernel_manager


def test_kernelspec_is_installed():
    spec = KernelSpecManager().get_kernel_spec("remote-gpu")
    assert spec.display_name == "Python 3 (remote GPU)" and spec.language == "python"
    assert spec.argv[1:3] == ["-m", "workbench.kernel"] and spec.interrupt_mode == "signal"


class RemoteGPUKernelTests(jkt.KernelTests):
    kernel_name = "remote-gpu"
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise ValueError('boom')"
    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "import cupy as cp; int(cp.arange(4).sum())", "result": "6"},
        {"code": "import cupy as cp; cp.arange(3) * 2", "result": "array([0, 2, 4])"},
    ]
    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>t</b>'))",
         "mime": "text/html"},
        {"code": "display(get_ipython().run_line_magic('catalog', 'show reef'))",
         "mime": "text/html"},
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "search")
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"

    def flush_channels(self) -> None:
        """jupyter_kernel_test's flush reads each channel until it has been quiet for 0.1 s.
        Under three busy loops (once, in the full suite) the first status read for a request
        was an ``idle`` ('idle' != 'busy'): by the library's own check of the parent, which
        it makes for replies only, an earlier request's that came after that quiet 0.1 s. A
        kernel_info request of the flush's own, whose ``idle`` is awaited, marks the end of
        everything the kernel published before it (its requests are handled in order); then
        the library's flush."""
        asked = self.kc.kernel_info()
        deadline = time.monotonic() + FLUSH_WAIT
        while True:
            msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["msg_type"] == "status" and msg["parent_header"].get("msg_id") == asked \
                    and msg["content"]["execution_state"] == "idle":
                break
        while self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic())
                                    )["parent_header"].get("msg_id") != asked:
            pass
        super().flush_channels()


    def execute_helper(self, code: str, timeout: int = jkt.TIMEOUT, silent: bool = False,
                       store_history: bool = True, stop_on_error: bool = True):
        """jupyter_kernel_test's, but each message on iopub after the reply is awaited up to
        IOPUB_WAIT, not the library's 0.1 s: under three busy loops (once, in the full suite)
        the kernel's ``idle`` came later than that after its reply, and the history test
        failed with ``Empty``. The same checks, in the same order."""
        msg_id = self.kc.execute(code=code, silent=silent, store_history=store_history,
                                 stop_on_error=stop_on_error)
        reply = self.get_non_kernel_info_reply(timeout=timeout)
        assert reply is not None
        validate_message(reply, "execute_reply", msg_id)
        busy_msg = self.kc.get_iopub_msg(timeout=IOPUB_WAIT)
        validate_message(busy_msg, "status", msg_id)
        self.assertEqual(busy_msg["content"]["execution_state"], "busy")
        output_msgs = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=IOPUB_WAIT)
            validate_message(msg, msg["msg_type"], msg_id)
            if msg["msg_type"] == "status":
                self.assertEqual(msg["content"]["execution_state"], "idle")
                break
            if msg["msg_type"] == "execute_input":
                self.assertEqual(msg["content"]["code"], code)
                continue
            output_msgs.append(msg)
        return reply, output_msgs


#: how long a flush waits for the kernel's answer to its own request
FLUSH_WAIT = 60.0
#: how long the execute helper waits for each message the kernel publishes after its reply
IOPUB_WAIT = 30.0


# ------------------------------------------------------------------ behaviour of our own


class Kernel:
    """A running remote-GPU kernel and a client, for the tests below (its channels Unix
    sockets in a directory of its own: tests/ipc_kernels.py says why)."""

    def __init__(self, env=None):
        self._dir = tempfile.TemporaryDirectory(prefix="gpuwb-kernel-")
        self.km = ipc_kernel_manager("remote-gpu", self._dir.name)
        self.km.start_kernel(env={**os.environ, **(env or {})})
        self.kc = self.km.client()
        self.kc.start_channels()
        try:
            self.kc.wait_for_ready(timeout=90)
        except RuntimeError:
            self.close()
            raise

    def run(self, code, timeout=60):
        """Execute; returns (status, text of streams/results, error message or None, seconds).

        The text is stdout and results, then stderr: the two streams are flushed apart,
        so their pieces may interleave in any order (a line of stderr split by stdout).
        """
        started = time.monotonic()
        msg_id = self.kc.execute(code)
        text, errs, error = [], [], None
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                (errs if content["name"] == "stderr" else text).append(content["text"])
            elif kind == "execute_result":
                text.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}\n" + "\n".join(content["traceback"])
            elif kind == "status" and content["execution_state"] == "idle":
                break
        reply = self.reply_to(msg_id, timeout)
        return reply["content"]["status"], "".join(text + errs), error, time.monotonic() - started

    def reply_to(self, msg_id, timeout=60):
        """The shell reply to *msg_id* (a slow start can leave extra kernel_info replies)."""
        while True:
            reply = self.kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=False)
        self._dir.cleanup()


@pytest.fixture(scope="module")
def kernel():
    k = Kernel()
    yield k
    k.close()


def test_async_error_shown_on_its_cell_with_the_line(kernel):
    kernel.run("import cupy as cp")
    status, _, error, _ = kernel.run("a = cp.ones(3)\nb = a + cp.ones(4)\nc = 1")
    assert status == "error"
    assert "ValueError" in error and "operator +" in error and "line 2 of cell" in error
    assert "session.py" not in error and "kernel.py" not in error   # our frames are hidden
    status, text, _, _ = kernel.run("print(float(a.sum()), c)")
    assert status == "ok" and text.strip() == "3.0 1"    # the session goes on


def test_an_error_at_a_sync_point_in_the_cell_shows_the_cells_line_only(kernel):
    """Raised inside the cell (``float``): the cell's line, then the message and the note;
    none of the client's frames, not even the last one IPython always shows."""
    kernel.run("import cupy as cp")
    status, _, error, _ = kernel.run("a = cp.ones(3)\nb = a + cp.ones(4)\nfloat(b.sum())")
    assert status == "error" and "ValueError" in error
    assert "float(b.sum())" in error and "line 2 of cell" in error, error
    assert "kernelproxy" not in error and "skipping hidden" not in error, error


def test_magics_are_loaded(kernel):
    status, text, error, _ = kernel.run("%gpu info")
    assert status == "ok", error
    status, text, error, _ = kernel.run("%catalog search preemption")
    assert status == "ok" and "REEF" in text, error


def test_interrupt_during_a_long_remote_op(kernel):
    kernel.run("import cupy as cp\nm = cp.random.rand(700, 700)")
    msg_id = kernel.kc.execute("import time\nt = time.time()\nwhile time.time() - t < 60:\n"
                               "    m = m @ m / 700\nfloat(m.sum())")
    time.sleep(1.5)
    interrupted = time.monotonic()
    kernel.km.interrupt_kernel()
    reply = kernel.reply_to(msg_id, timeout=30)
    assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - interrupted < 10, "the interrupt was not prompt"
    status, text, error, seconds = kernel.run("print(float(cp.arange(4).sum()))")
    if status == "aborted":   # ipykernel aborts what arrives within its window after an error
        status, text, error, seconds = kernel.run("print(float(cp.arange(4).sum()))")
    assert status == "ok" and text.strip() == "6.0", error
    assert seconds < 20, "the queued work was not cancelled (it would run for a minute)"
    status, _, error, _ = kernel.run("m.sum()")         # m's later values were cancelled
    assert status in ("ok", "error")


def test_pool_lost_then_reconnect(tmp_path):
    port_pool = LocalPool(devices="cpu", lease_timeout=2.0).start()
    address, token, tcp_address = port_pool.address, port_pool.token, port_pool.tcp_address
    assert address.startswith("ipc://")
    k = Kernel(env={"GPUWB_POOL": address, "GPUWB_TOKEN": token})
    try:
        status, _, error, _ = k.run("import cupy as cp\nx = cp.arange(5)\nprint(int(x.sum()))")
        assert status == "ok", error
        port_pool.stop()                                  # the pool goes away
        status, _, error, _ = k.run("print(int(x.sum()))", timeout=60)
        assert status == "error" and "SessionLostError" in error
        status, text, error, _ = k.run("print('still alive')")
        assert "still alive" in text                      # the kernel stays up
        # back on the same port: the same ipc:// address (the kernel uses the pool's same-host door)
        again = LocalPool(devices="cpu", lease_timeout=2.0, listen=tcp_address, token=token).start()
        try:                                              # back: the next cell reconnects itself
            status, text, error, _ = k.run("y = cp.arange(4)\nprint(int(y.sum()))")
            assert status == "ok" and "6" in text.splitlines(), error
            assert "opened a new one" in text
        finally:
            again.stop()
    finally:
        k.close()


def test_shutdown_closes_the_session():
    pool = LocalPool(devices="cpu", lease_timeout=30.0).start()
    try:
        k = Kernel(env={"GPUWB_POOL": pool.address, "GPUWB_TOKEN": pool.token})
        status, _, error, _ = k.run("import cupy as cp\nx = cp.ones(1000)\nprint(float(x.sum()))")
        assert status == "ok", error
        assert len(pool.door.status()["sessions"]) == 1
        k.close()
        deadline = time.monotonic() + 15
        while pool.door.status()["sessions"] and time.monotonic() < deadline:
            time.sleep(0.1)
        status = pool.door.status()
        assert status["sessions"] == []
        assert status["ended"] and status["ended"][-1]["reason"] == "closed by the client"
    finally:
        pool.stop()


def test_long_transfers_show_progress_in_place_then_disappear():
    """A streamed upload and download (chunks of 1 MiB, shown from the first chunk on)
    display a bar by display id, updated in place, blanked when done."""
    k = Kernel(env={"GPUWB_STREAM_BYTES": str(1 << 20), "GPUWB_PROGRESS_AFTER": "0"})
    try:
        msg_id = k.kc.execute("import numpy as np, cupy as cp\n"
                              "x = cp.asarray(np.ones(16 << 20, dtype=np.uint8))\n"
                              "y = x.get()\nprint('moved', y.size)")
        shown, updates, printed = {}, [], ""
        while True:
            msg = k.kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "display_data":
                shown[content["transient"]["display_id"]] = content["data"]["text/plain"]
            elif kind == "update_display_data":
                updates.append((content["transient"]["display_id"], content["data"]["text/plain"]))
            elif kind == "stream":
                printed += content["text"]
            elif kind == "status" and content["execution_state"] == "idle":
                break
        assert "moved 16777216" in printed
        texts = list(shown.values()) + [text for _, text in updates]
        assert any(t.startswith("upload:") for t in texts), texts
        assert any(t.startswith("download:") for t in texts), texts
        assert len(shown) == 2   # one display per transfer, the rest in place
        for display_id in shown:   # each ends blank
            assert [text for i, text in updates if i == display_id][-1] == ""
    finally:
        k.close()


def test_short_transfers_show_nothing():
    from workbench.progress import NotebookProgress
    clock = iter([0.0, 0.1, 0.5, 0.9]).__next__   # a transfer done within SHOW_AFTER
    progress = NotebookProgress("upload", 100, show_after=1.0, clock=clock)
    for done in (10, 50, 100):
        progress.update(done)
    progress.close()
    assert progress.updates == 0
