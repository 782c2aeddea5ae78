"""The fourth campaign's loop programs for benchmarks/unseen_loops.py: loops drawing from
``default_rng``'s Generator, written for the draws a stretch's graphs now make themselves
(``random``, ``uniform``, ``standard_normal``, ``standard_exponential``, ``exponential``,
``integers``:
gpu_backend/worker/eager_ops.py's ``captured_draw``), each launch the generator's next
numbers. Draws kept past their iteration and written later, sizes that change, float32
draws, integers used as a gather's indices, two Generators in one body, a scale that
changes (that draw stays eager) beside one that does not, a read that decides whether to
draw again, batches of steps between reads, ``random`` beside ``uniform``, draws feeding
a matrix product, a Generator made anew now and then, a step that fails part-way (caught),
and draws after the loop. Every one compares with local CuPy only (NumPy draws other
numbers): ``PROGRAMS`` names each with its iterations and False."""

from __future__ import annotations

from typing import Callable

from unseen_loop_bodies import fbits, host


def graphed_draws_kept_and_written(xp, n):
    """Each step's ``random`` kept; after the loop each is written in place and read again
    (a draw the graphs made is handed out as the client's own array)."""
    rng = xp.random.default_rng(41)
    kept, out = [], []
    for i in range(n):
        w = rng.random(24)
        kept.append(w)
        out.append(fbits(float((w * (2.0 if i % 4 == 3 else 1.0)).sum())))
    for w in kept:
        w += 1.0
    return out + [host(xp, xp.stack(kept)), host(xp, rng.random(3))]


def graphed_draws_changing_size(xp, n):
    """Normal draws whose count cycles through three sizes (three stretches)."""
    rng = xp.random.default_rng(42)
    out = []
    for i in range(n):
        z = rng.standard_normal(99 + i % 3)
        out.append(fbits(float((z * z).sum())))
    return out + [host(xp, rng.standard_normal(4))]


def graphed_float32_draws(xp, n):
    """float32 ``random`` and ``standard_normal``, summed in float64."""
    rng = xp.random.default_rng(43)
    out = []
    for i in range(n):
        x = rng.random(80, dtype=xp.float32) + rng.standard_normal(80, dtype=xp.float32)
        out.append(fbits(float(x.astype(xp.float64).sum())))
    return out


def graphed_integers_as_indices(xp, n):
    """A minibatch's indices drawn by ``integers`` and gathered through, in the step."""
    rng = xp.random.default_rng(44)
    data = xp.linspace(-3.0, 3.0, 500)
    w = xp.zeros(())
    out = []
    for i in range(n):
        idx = rng.integers(0, 500, 32)
        batch = data[idx]
        w = w - 0.01 * (w - batch).mean()
        out.append(fbits(float(w)))
    return out + [host(xp, rng.integers(0, 9, 5))]


def graphed_two_generators(xp, n):
    """Two Generators drawn in turn in one body."""
    a, b = xp.random.default_rng(45), xp.random.default_rng(46)
    out = []
    for i in range(n):
        x = a.standard_normal(50) - b.random(50) + a.standard_exponential(50)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, a.random(2)), host(xp, b.random(2))]


def graphed_scale_that_changes(xp, n):
    """``exponential`` with a scale that changes each step (a parameter: baked into the first
    capture, eager from the second) beside one with a constant scale (made in the graph)."""
    rng = xp.random.default_rng(47)
    out = []
    for i in range(n):
        x = rng.exponential(1.0 + 0.01 * i, 40) + rng.exponential(2.0, 40)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, rng.random(3))]


def graphed_read_decides(xp, n):
    """A read decides whether the step draws once more."""
    rng = xp.random.default_rng(48)
    out = []
    for i in range(n):
        m = float(rng.random(64).mean())
        if m > 0.5:
            m += float(rng.standard_normal(3).sum())
        out.append(fbits(m))
    return out + [host(xp, rng.random(4))]


def graphed_batches_between_reads(xp, n):
    """Five steps of draws into a running sum, then a read."""
    rng = xp.random.default_rng(49)
    acc = xp.zeros(128)
    out = []
    for i in range(n):
        acc = acc * 0.9 + rng.standard_normal(128)
        if i % 5 == 4:
            out.append(fbits(float(acc.std())))
    return out + [host(xp, acc)]


def graphed_beside_uniform(xp, n):
    """``random`` and ``uniform`` from one Generator in one step, in that order and the
    other, and ``standard_gamma`` (eager: CuPy uploads its shape) every fifth step."""
    rng = xp.random.default_rng(50)
    out = []
    for i in range(n):
        if i % 2:
            x = rng.random(30) * rng.uniform(-1.0, 1.0, 30)
        else:
            x = rng.uniform(0.0, 2.0, 30) - rng.random(30)
        if i % 5 == 4:
            x = x + rng.standard_gamma(2.0, 30)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, rng.random(3))]


def graphed_noise_into_a_product(xp, n):
    """Normal noise of a matrix's shape added before a matrix product (made in the graph
    too), float32."""
    rng = xp.random.default_rng(51)
    w = xp.eye(16, dtype=xp.float32) * 0.5
    h = xp.ones((8, 16), dtype=xp.float32)
    out = []
    for i in range(n):
        h = xp.tanh(h @ w + 0.1 * rng.standard_normal((8, 16), dtype=xp.float32))
        out.append(fbits(float(h.sum())))
    return out + [host(xp, h)]


def graphed_generator_made_anew(xp, n):
    """A Generator made anew every tenth step (seeded by the step), drawn each step."""
    out = []
    rng = None
    for i in range(n):
        if i % 10 == 0:
            rng = xp.random.default_rng(i)
        out.append(fbits(float(rng.random(20).sum())))
    return out


def graphed_step_that_fails(xp, n):
    """A step whose draw's size does not fit the array it is added to every seventh
    iteration (a ValueError, caught): the generator moved as CuPy's did."""
    rng = xp.random.default_rng(52)
    x = xp.ones(40)
    out = []
    for i in range(n):
        try:
            y = x + rng.random(41 if i % 7 == 6 else 40)
            out.append(fbits(float(y.sum())))
        except ValueError:
            out.append("ValueError")
    return out + [host(xp, rng.random(3))]


PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, False) for f, iters in [
        (graphed_draws_kept_and_written, 60),
        (graphed_draws_changing_size, 60),
        (graphed_float32_draws, 60),
        (graphed_integers_as_indices, 80),
        (graphed_two_generators, 60),
        (graphed_scale_that_changes, 60),
        (graphed_read_decides, 60),
        (graphed_batches_between_reads, 100),
        (graphed_beside_uniform, 60),
        (graphed_noise_into_a_product, 60),
        (graphed_generator_made_anew, 60),
        (graphed_step_that_fails, 70),
    ]}
