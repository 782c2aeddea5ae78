"""The third campaign's loop programs for benchmarks/unseen_loops.py: loops that draw random
numbers, written for the draws a replay now runs ahead and undoes from its generator's
journal (gpu_backend/worker/draw_journal.py). Draw sizes that change (odd normal counts,
which CuPy draws one more of), reads that decide whether to draw again, generators
interleaved, float32 draws, draws kept past their iteration and written later, a generator
made in the loop, two bodies taking turns, a scalar the run ahead's guess misses, CuPy's own
kernels' draws (``binomial``, ``poisson``, ``gamma``: ``_rk_seed``), a loop run twice around
a reseed, a draw that fails mid-loop, a shuffle that ends the journal, ``choice`` and
``permutation`` of an int; and ``default_rng``'s Generator (its state copied before a run
ahead draws), with ``binomial`` beside it and beside a RandomState. Every one compares with local CuPy only (NumPy draws other
numbers): ``PROGRAMS`` names each with its iterations and False."""

from __future__ import annotations

from typing import Callable

from unseen_loop_bodies import fbits, host


def draws_changing_size(xp, n):
    """Normal draws whose count cycles through odd and even sizes."""
    rs = xp.random.RandomState(21)
    out = []
    for i in range(n):
        z = rs.standard_normal(100 + i % 3)
        out.append(fbits(float(z.sum())))
    return out + [host(xp, rs.random_sample(5))]


def draws_branch_on_value(xp, n):
    """A read decides whether the iteration draws once more."""
    xp.random.seed(22)
    out = []
    for i in range(n):
        r = xp.random.rand(64)
        m = float(r.mean())
        if m > 0.5:
            m += float(xp.random.rand(3).sum())
        out.append(fbits(m))
    return out + [host(xp, xp.random.rand(4))]


def draws_two_generators_interleaved(xp, n):
    """Two RandomStates and the global one, drawn in turn each iteration."""
    a, b = xp.random.RandomState(1), xp.random.RandomState(2)
    xp.random.seed(3)
    out = []
    for i in range(n):
        x = a.normal(0.0, 1.0, 50) + b.uniform(-1.0, 1.0, 50) * xp.random.rand(50)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, a.random_sample(3)), host(xp, b.random_sample(3))]


def draws_float32(xp, n):
    """float32 draws: ``rand``'s dtype, ``standard_normal``'s and ``normal``'s."""
    rs = xp.random.RandomState(23)
    xp.random.seed(24)
    out = []
    for i in range(n):
        x = xp.random.rand(80, dtype=xp.float32) + rs.standard_normal(80, dtype=xp.float32)
        x = x * rs.normal(size=80, dtype=xp.float32)
        out.append(fbits(float(x.astype(xp.float64).sum())))
    return out


def draws_kept_and_written_later(xp, n):
    """Each iteration's draw kept in a list; after the loop every one is written in place
    and read again (a draw handed on must be the client's own array)."""
    rs = xp.random.RandomState(25)
    kept = []
    out = []
    for i in range(n):
        z = rs.random_sample(16)
        kept.append(z)
        out.append(fbits(float((z * (3.0 if i % 5 == 4 else 1.0)).sum())))
    for z in kept:
        z *= 2.0
    return out + [host(xp, xp.stack(kept))]


def generator_made_in_the_loop(xp, n):
    """A fresh RandomState each iteration, seeded by the iteration."""
    out = []
    for i in range(n):
        rs = xp.random.RandomState(i)
        out.append(fbits(float(rs.random_sample(32).sum())))
    return out


def draws_two_bodies_in_turn(xp, n):
    """Even iterations draw uniforms, odd ones normals, from one generator."""
    rs = xp.random.RandomState(26)
    out = []
    for i in range(n):
        if i % 2:
            v = float((rs.standard_normal(40) * 2.0).sum())
        else:
            v = float((rs.uniform(0.0, 2.0, 40) - 1.0).sum())
        out.append(fbits(v))
    return out + [host(xp, rs.random_sample(3))]


def draws_scalar_guess_misses(xp, n):
    """The random walk with a scale the run ahead's guess misses in the last bit (its draws
    handed on to the client's replay)."""
    xp.random.seed(27)
    x = xp.zeros(128, dtype=xp.float32)
    out = []
    for i in range(n):
        x += (xp.random.rand(128).astype(xp.float32) - 0.5) * (0.1 + 1e-4 * i)
        out.append(fbits(float(x.mean())))
    return out + [host(xp, x), host(xp, xp.random.rand(3))]


def draws_cupy_kernels(xp, n):
    """Draws made by CuPy's own kernels from the generator's ``_rk_seed``: binomial,
    poisson, gamma, randint."""
    rs = xp.random.RandomState(28)
    out = []
    for i in range(n):
        s = rs.binomial(10, 0.3, 60).sum() + rs.poisson(3.0, 60).sum()
        g = rs.gamma(2.0, 1.0, 60).sum() + rs.randint(0, 9, 60).sum()
        out.append(fbits(float(s) + float(g)))
    return out + [host(xp, rs.random_sample(3))]


def draws_loop_run_twice_around_a_reseed(xp, n):
    """The same loop twice, the generator reseeded between: the second run's numbers are
    the first's."""
    out = []
    for _ in range(2):
        xp.random.seed(29)
        for i in range(n // 2):
            out.append(fbits(float(xp.random.standard_normal(30).sum())))
    return out


def draws_failing_mid_loop(xp, n):
    """A draw with a bad argument raises in some iterations (caught); the loop goes on."""
    rs = xp.random.RandomState(30)
    out = []
    for i in range(n):
        try:
            size = -1 if i % 9 == 8 else 20
            out.append(fbits(float(rs.random_sample(size).sum())))
        except ValueError:
            out.append("ValueError")
    return out + [host(xp, rs.random_sample(4))]


def draws_then_shuffle(xp, n):
    """A shuffle mid-loop (an array given: the generator's journal ends) and draws on."""
    rs = xp.random.RandomState(31)
    order = xp.arange(12)
    out = []
    for i in range(n):
        out.append(fbits(float(rs.random_sample(24).sum())))
        if i == n // 2:
            rs.shuffle(order)
    return out + [host(xp, order), host(xp, rs.random_sample(4))]


def draws_choice_and_permutation_of_an_int(xp, n):
    """``choice(50, 5)`` and ``permutation(10)`` each iteration (ints: made again from the
    journal)."""
    xp.random.seed(32)
    out = []
    for i in range(n):
        c = xp.random.choice(50, 5)
        p = xp.random.permutation(10)
        out.append(int((c * p[:5]).sum()))
    return out + [host(xp, xp.random.rand(3))]


def generator_api_loop(xp, n):
    """``default_rng``'s Generator: normals and uniforms each iteration, a read, and draws
    after the loop (a Generator's state is copied before a run ahead draws)."""
    rng = xp.random.default_rng(33)
    out = []
    for i in range(n):
        z = rng.standard_normal(64) * 0.5 + rng.uniform(0.0, 1.0, 64)
        out.append(fbits(float(z.sum())))
    return out + [host(xp, rng.random(5)), host(xp, rng.integers(0, 50, 6))]


def generator_binomial_and_scale_jump(xp, n):
    """A Generator's ``binomial`` (never drawn ahead: a state of its own) beside its
    ``random``, and a scale that jumps mid-loop."""
    rng = xp.random.default_rng(34)
    out = []
    for i in range(n):
        r = rng.random(40) * (1.0 if i < n // 2 else 5.0)
        out.append(fbits(float(r.sum())))
        if i % 10 == 9:
            out.append(int(rng.binomial(20, 0.4, 8).sum()))
    return out + [host(xp, rng.random(3))]


def generator_beside_random_state(xp, n):
    """A Generator and a RandomState drawn in one body, and the global state between loops."""
    xp.random.seed(37)
    rng = xp.random.default_rng(35)
    rs = xp.random.RandomState(36)
    out = []
    for i in range(n):
        v = rng.random(32) - rs.random_sample(32)
        out.append(fbits(float(v.sum())))
        if i == n // 3:
            out.append(host(xp, xp.random.rand(2)))
    return out + [host(xp, rng.random(2)), host(xp, rs.random_sample(2))]


PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, False) for f, iters in [
        (draws_changing_size, 60),
        (draws_branch_on_value, 60),
        (draws_two_generators_interleaved, 60),
        (draws_float32, 60),
        (draws_kept_and_written_later, 60),
        (generator_made_in_the_loop, 40),
        (draws_two_bodies_in_turn, 60),
        (draws_scalar_guess_misses, 120),
        (draws_cupy_kernels, 40),
        (draws_loop_run_twice_around_a_reseed, 80),
        (draws_failing_mid_loop, 60),
        (draws_then_shuffle, 60),
        (draws_choice_and_permutation_of_an_int, 40),
        (generator_api_loop, 60),
        (generator_binomial_and_scale_jump, 60),
        (generator_beside_random_state, 60),
    ]}
