"""Loops whose held stretches once answered differently from the same ops sent one by one
(found by benchmarks/unseen_loops.py, programs no test had seen): a NaN scalar's sign, an
int too large to send, a download inside a loop whose early replay was abandoned. Each loop
runs on sessions with replay as measured (the defaults), held whatever its timing (the
compiled held ops and the Python ones) and off, and gives what NumPy gives (local CuPy on a
GPU)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import reference_module

SETTINGS = {
    "defaults": SessionSettings(),
    "held": SessionSettings(replay_measured=False),
    "held-python": SessionSettings(replay_measured=False, compiled=False),
    "no-replay": SessionSettings(graphs=False),
}


def _on_every_session(pool, program):
    got = {}
    for name, settings in SETTINGS.items():
        with Session(pool.address, pool.token, settings=settings) as s:
            got[name] = program(module_for(s))
    return got


def nan_signs(xp):
    """A ufunc call's NaN scalar changes sign part-way (a parameter, as an operator's: a
    replay must give -nan's sign, never take it for nan's)."""
    x = xp.ones(2)
    out = []
    for i in range(24):
        s = math.nan if i < 12 else -math.nan
        out.append(math.copysign(1.0, float(xp.add(x, s)[0])))
        out.append(math.copysign(1.0, float(xp.maximum(x, s)[1])))
    return out


def unsendable_int(xp):
    """``x + 10**400`` once, caught: the error is raised at that op (not at the next read,
    where a held stretch sent its parameters), and the reads after it have their values."""
    x = xp.ones(4, dtype=xp.float32)
    log = []
    for i in range(40):
        try:
            x + (10 ** 400 if i == 30 else 3)
            log.append("op")
        except OverflowError:
            log.append(("overflow at the op", i))
        log.append(float(x.sum()))
    return log


def download_in_the_body(xp):
    """A download every seventh iteration: the run takes another held stretch of the same
    first ops, and the early replay its first template sent is abandoned."""
    x = xp.linspace(0, 1, 100)
    out = []
    for i in range(60):
        x = x * 1.01 + 0.001
        if i % 7 == 6:
            out.append(float((x if xp is np else x.get())[3]))
        out.append(float(x.sum()))
    return out


@pytest.mark.parametrize("program", [nan_signs, unsendable_int, download_in_the_body])
def test_every_session_gives_what_the_ops_give(pool, program):
    got = _on_every_session(pool, program)
    want = got["no-replay"]
    for name, values in got.items():
        assert values == want, name
    local = program(reference_module())   # (NumPy; local CuPy on a GPU)
    if program is unsendable_int:   # (NumPy's own message differs; where does not)
        assert [v if not isinstance(v, tuple) else v[1] for v in want] == \
            [v if not isinstance(v, tuple) else v[1] for v in local]
    else:
        assert want == local


def test_kernelproxy_imported_through_a_path_with_dots_still_knows_its_own_frames():
    """A script that puts ``join(dirname(__file__), "..")`` on ``sys.path`` imports the
    package under file names with ``..`` in them: its frames are still its own, and an op's
    line is the user's (not ``kernelproxy/issue.py``)."""
    import os

    import kernelproxy
    from kernelproxy import caller

    here = os.path.dirname(os.path.abspath(kernelproxy.__file__))
    dotted = os.path.join(here, "..", os.path.basename(here), "issue.py")
    ours = compile("pass", dotted, "exec")
    theirs = compile("pass", os.path.join(here, "..", "benchmarks", "mine.py"), "exec")
    assert caller._own(ours) and not caller._own(theirs)
