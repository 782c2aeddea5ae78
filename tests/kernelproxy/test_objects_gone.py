"""A held stretch that calls a remote object's methods is dropped once that object is released
(kernelproxy/stretch_replay.py, ``object_gone``): its key holds the object's id as a literal,
an id never given again, so the stretch can never be replayed after. A ``RandomState`` or a
``default_rng`` made for each run of a cell is a new object each run, and each run's loop a
new stretch: without this, the client kept every run's template (each op of a run checked
against all of them) and the worker every run's stretch and its graphs (six after six runs of
``mc_option`` on an H200, run 204). Through a real pool on the NumPy device, each loop's
numbers against a session without stretch replay."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from gpu_backend.pool import LocalPool
from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..differential import TEST_DEVICES, assert_bitwise

RUNS = 5
STEPS = 30


@pytest.fixture(scope="module")
def pool():
    with LocalPool(devices=TEST_DEVICES, memory_limit=1 << 28) as p:
        yield p


def _priced(cp, seed):
    """mc_option's loop on a RandomState of its own, made for this run."""
    rs = cp.random.RandomState(seed)
    prices = []
    for _ in range(STEPS):
        z = rs.standard_normal(256)
        prices.append(float(cp.maximum(100.0 * cp.exp(0.01 + 0.2 * z) - 105.0, 0.0).mean()))
    return prices


def _bootstrap(cp, seed):
    """A Generator made for this run, two draws a step."""
    rng = cp.random.default_rng(seed)
    sample = cp.linspace(-1.0, 1.0, 128)
    means = []
    for _ in range(STEPS):
        w = rng.random(128)
        means.append(float((w * (sample + 0.01 * rng.standard_normal(128))).sum() / w.sum()))
    return means


def _runs(cp, loop):
    out = []
    for run in range(RUNS):
        out.append(loop(cp, 10 + run))
        gc.collect()   # (the run's generator released, as a cell's end would)
    return out


@pytest.mark.parametrize("loop", [_priced, _bootstrap], ids=["random-state", "generator"])
def test_a_generator_made_for_each_run_leaves_one_stretch_held_not_one_a_run(pool, loop):
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        got = _runs(module_for(s), loop)
        client = s.stretches.figures()
        worker = s.memory_info()["stretches"]
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as plain:
        want = _runs(module_for(plain), loop)
    assert_bitwise(np.array(got), np.array(want))
    # (each run's loop was held and replayed; the runs' stretches of generators released
    # were dropped, on the client and in the worker, at the next stretch's start)
    assert client["replays"] >= RUNS * (STEPS // 3), client
    assert client["objects_gone"] >= RUNS - 2, client
    assert client["held"] <= 2 and worker["held"] <= 2, (client, worker)


def test_releasing_an_array_drops_no_held_stretch(pool):
    """A handle released that no held key names as an object's target (an array's, a
    temporary's) leaves every held stretch held. (Stretches kept whatever their timing:
    ``replay_measured`` off, as a loaded host's timing may let one go.)"""
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        cp = module_for(s)
        x = cp.arange(64, dtype=cp.float32)
        for _ in range(STEPS):
            y = x * 2.0 + 1.0
            float(y.sum())
            del y
        held = s.stretches.figures()["held"]
        x2 = cp.ones(3)
        del x2
        float((x * 2.0 + 1.0).sum())
        figures = s.stretches.figures()
    assert held >= 1 and figures["held"] == held and figures["objects_gone"] == 0, figures


@pytest.mark.parametrize("loop", [_priced, _bootstrap], ids=["random-state", "generator"])
def test_the_next_runs_loop_is_held_from_its_first_sighting(pool, loop):
    """Each run's loop has the shape of the one before but for its new generator
    (``_known_shape``): held from its first sighting and offered at its second, its replays
    from the third on, where a stretch never seen waits for its fifth sighting (the run's
    first step, which makes the generator, is a stretch of its own: 27 replays a run of 30
    steps, against 24 before). The first run's loop is new: counted as any."""
    with Session(pool.address, pool.token, settings=SessionSettings(replay_measured=False)) as s:
        cp = module_for(s)
        got, replays = [], []
        for run in range(RUNS):
            got.append(loop(cp, 10 + run))
            gc.collect()
            replays.append(s.stretches.figures()["replays"])
        figures = s.stretches.figures()
    with Session(pool.address, pool.token, settings=SessionSettings(graphs=False)) as plain:
        want = _runs(module_for(plain), loop)
    assert_bitwise(np.array(got), np.array(want))
    per_run = [b - a for a, b in zip(replays, replays[1:])]
    assert figures["gone_shapes_met"] == RUNS - 1, figures
    assert all(n >= STEPS - 3 for n in per_run), (per_run, figures)
