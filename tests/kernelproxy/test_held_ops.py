"""The held op's compiled accelerator (kernelproxy/held_ops.py, kernelproxy/_held_ops.c):
built by the README's install where a C compiler is found, on the array class, and saying
what the Python methods say. Its results are compared with the Python methods' on every
loop of tests/kernelproxy/test_stretch_fast_path.py (a session of each)."""

from __future__ import annotations

import shutil
import sys
import sysconfig

import numpy as np
import pytest

from kernelproxy import caller, held_ops
from kernelproxy.modules import module_for
from kernelproxy.ndarray import ndarray
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings


def _compiler_found() -> bool:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(compiler) is not None


@pytest.mark.skipif(not _compiler_found(), reason="no C compiler: the Python methods serve alone")
def test_the_accelerator_is_built_and_on_the_array_class():
    assert held_ops.AVAILABLE, "pip install -e . found a C compiler but built no kernelproxy/_held_ops"
    for name in ("__add__", "__radd__", "__mul__", "__truediv__", "__rsub__", "__pow__",
                 "__matmul__", "__lt__", "__ge__", "__and__", "__del__"):
        method = ndarray.__dict__[name]
        assert type(method).__name__ == "HeldMethod", name
        assert callable(method.__wrapped__)   # the Python method it stands in for


@pytest.mark.skipif(not held_ops.AVAILABLE, reason="the accelerator is not built")
def test_the_compiled_call_site_is_the_python_one():
    code = sys._getframe().f_code
    compiled = held_ops._held_ops.call_site(); python = caller.call_site(1)   # one line
    assert compiled[0] is python[0] is code
    assert caller.site_line(compiled) == caller.site_line(python)


def _held_int8_loop(cp, fail_at: int):
    """A loop whose second op is answered from the template (by the compiled operator where
    the session has it): its scalar overflows int8 at step *fail_at*, which the worker
    refuses when the replay runs."""
    small = cp.arange(8, dtype=cp.int8)
    for step in range(fail_at + 1):
        k = 1000 if step == fail_at else 1
        t = small * 1
        u = t + k                     # the failing op's line
        float(u.sum())


_FAILING_LINE = _held_int8_loop.__code__.co_firstlineno + 8


@pytest.mark.parametrize("compiled", [True, False])
def test_an_error_of_an_op_answered_from_its_template_names_its_line(pool, compiled):
    session = Session(pool.address, pool.token,
                      settings=SessionSettings(replay_measured=False, compiled=compiled))
    try:
        cp = module_for(session)
        with pytest.raises((OverflowError, TypeError)) as raised:
            _held_int8_loop(cp, 14)
        assert session.stretches.figures()["fast"] > 0   # (the failing op's run was one)
        notes = " ".join(getattr(raised.value, "__notes__", []))
        assert f"operator +, issued at {__file__}:{_FAILING_LINE}" in notes, notes
        t = cp.arange(8, dtype=cp.int8) * 1   # the session goes on
        assert float((t + 1).sum()) == float(np.arange(8, dtype=np.int8).sum() + 8)
    finally:
        session.close()


@pytest.mark.skipif(held_ops._held_ops is None, reason="the accelerator is not built")
def test_a_sigint_inside_the_compiled_finaliser_is_raised_after_it_not_lost(pool, monkeypatch):
    """A SIGINT that lands in the Python the compiled ``__del__`` calls (Session.release)
    was raised inside a finaliser, where Python prints it as ignored: the stop was lost and
    the cell ran on (tests/gpu_backend/test_pushed_replies.py lost one of 24). It is
    delivered again once the finaliser is done, and raised in the code that dropped the
    array; the session goes on."""
    import signal

    session = Session(pool.address, pool.token)
    released = []
    real_release = session.release

    def release(hid, unread):   # (the real release, then a real SIGINT while still in it)
        real_release(hid, unread)
        released.append(hid)
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):   # (Python's handler raises at the loop's next check)
            pass

    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        cp = module_for(session)
        dropped = cp.arange(4)
        assert type(ndarray.__dict__["__del__"]).__name__ == "HeldMethod"
        monkeypatch.setattr(session, "release", release)
        with pytest.raises(KeyboardInterrupt):
            del dropped
            for _ in range(1000):   # (delivered again once the finaliser returned)
                pass
        assert len(released) == 1
        monkeypatch.undo()
        assert float(cp.arange(4).sum()) == 6.0
    finally:
        signal.signal(signal.SIGINT, previous)
        session.close()
