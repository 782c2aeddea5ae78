"""Why graphs never served a held stretch, counted (``memory_info()["stretches"]
["never_graphed"]``, StretchGraphs.never_graphed): benchmarks/unseen_speed.py shows it beside
each loop, so that what keeps a loop off its graphs is read, not guessed. Counted for the
stretches held now and for those let go (the client lets go a stretch no graph serves)."""

from __future__ import annotations

import numpy as np

from kernelproxy.modules import module_for
from kernelproxy.session import Session
from kernelproxy.settings import SessionSettings

from ..run_ahead_sessions import pool_running_ahead


def test_the_reasons_a_stretch_is_never_graphed_are_counted():
    with pool_running_ahead("none") as pool, \
            Session(pool.address, pool.token,
                    settings=SessionSettings(replay_measured=False)) as session:
        cp = module_for(session)
        x = cp.linspace(0.0, 3.0, 16)
        for _ in range(12):
            x = x * 0.5 + 1.0
            solution, _res, _rank, singular = cp.linalg.lstsq(cp.outer(x[:4], x[:4]) + cp.eye(4),
                                                             x[:4], rcond=None)
            float(solution.sum())             # (lstsq's structure, its rank an int, waited
            a = x.get()                       #  for: no graph serves it; x.get() closes the
            b = singular.get()                #  next stretch: graphed; a download alone:
            assert a.shape == (16,) and b.shape == (4,)   # nothing to graph)
        figures = session.memory_info()["stretches"]
    never = figures["never_graphed"]
    assert never.get("linalg.lstsq (kind f)", 0) >= 1, figures
    assert never.get("downloads alone", 0) >= 1, figures
    assert all(type(k) is str and type(v) is int and v >= 1 for k, v in never.items()), never
    assert figures["graphed"] > 0, figures   # (the stretch closing with a download is)
    assert np.isfinite(a).all()


def test_a_stretch_with_a_call_of_several_results_is_graphed_around_it():
    """``modf`` opening a loop's body (``api.ARRAYS``): the stretch is held, the call runs
    eagerly between its graphs (as a solver's does), the ops after it graphed; no reason
    keeps it off graphs. (Before, every such stretch was never graphed: "an op of several
    results", each replay a re-run of its records.)"""
    with pool_running_ahead("none") as pool, \
            Session(pool.address, pool.token,
                    settings=SessionSettings(replay_measured=False)) as session:
        cp = module_for(session)
        x = cp.linspace(0.5, 3.0, 16)
        for _ in range(12):
            f, i = cp.modf(x)
            x = x * 0.5 + f + i * 0.25
            float(x.sum())
        figures = session.memory_info()["stretches"]
    assert not figures["never_graphed"], figures
    assert figures["replays"] >= 4 and figures["graphed"] == figures["replays"], figures
    assert figures["between_graphs"] >= figures["graphed"], figures
