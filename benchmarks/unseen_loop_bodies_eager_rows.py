"""The seventh campaign's loop programs for benchmarks/unseen_loops.py: loops whose eager ops
(a ``RandomState``'s draws, which cuRAND makes outside the graphs; a product the graphs do not
make) come before or between a stretch's graphs, written for the copies those graphs now make
themselves (gpu_backend/worker/graph_copies.py: the first graph gathers the inputs after eager
ops that read none, and every graph the arrays of the eager ops before it). A draw first and
an array written in place; two draws first and no input; a draw between two graphs (Langevin's
noise); an odd normal count (its array a view of one longer: copied apart); a draw's size that
changes now and then (a layout changed under an eager op: the copies made apart); a draw kept
by the user past the step and read by the graph; an eager product (``tensordot``) between two
graphs; a draw before a graph that reads an input the draw's size comes from (an eager op that
reads an input keeps the copies apart); an odd float32 normal beside an even one; a draw an
eager op then reads (``outer``) or writes (``shuffle``) before the graph; a draw the step
writes in place and keeps, and one whose step fails now and then before the write; an eager
op that returns the graph's temporary it is given. Every one
compares with local CuPy only (NumPy draws other numbers): ``PROGRAMS`` names each with its
iterations and False."""

from __future__ import annotations

from typing import Callable

from unseen_loop_bodies import fbits, host


def rows_draw_then_in_place(xp, n):
    """``x += (rand(n) - 0.5) * s``: the draw first, then a graph writing the loop's array."""
    xp.random.seed(61)
    x = xp.zeros(96, dtype=xp.float32)
    out = []
    for i in range(n):
        x += (xp.random.rand(96).astype(xp.float32) - 0.5) * (0.1 + 1e-3 * (i % 5))
        out.append(fbits(float(x.mean())))
    return out + [host(xp, x), host(xp, xp.random.rand(3))]


def rows_two_draws_no_input(xp, n):
    """Monte Carlo π: two uniform draws, then a graph, no input at all."""
    rs = xp.random.RandomState(62)
    out = []
    for i in range(n):
        a = rs.uniform(-1.0, 1.0, 200)
        b = rs.uniform(-1.0, 1.0, 200)
        out.append(fbits(4.0 * float(((a * a + b * b) <= 1.0).mean())))
    return out + [host(xp, rs.uniform(size=4))]


def rows_draw_between_graphs(xp, n):
    """Langevin: a gradient step (a graph), a normal draw whose scale anneals, the step's end
    (another graph), the energy read."""
    rs = xp.random.RandomState(63)
    x = xp.zeros(128)
    out = []
    for i in range(n):
        eta = 0.05 / (1.0 + 0.02 * i)
        grad = 4.0 * x * (x * x - 1.0)
        x = x - eta * grad + rs.normal(0.0, (2.0 * eta) ** 0.5, 128)
        out.append(fbits(float(((x * x - 1.0) ** 2).mean())))
    return out + [host(xp, x)]


def rows_odd_normal_count(xp, n):
    """An odd count of normal draws (CuPy draws one more and hands out a view): copied apart,
    beside an even one gathered."""
    rs = xp.random.RandomState(64)
    out = []
    for i in range(n):
        z = rs.standard_normal(101)
        w = rs.standard_normal(100)
        out.append(fbits(float((z[:100] * w).sum())))
    return out + [host(xp, rs.standard_normal(5))]


def rows_size_changes_now_and_then(xp, n):
    """A draw whose size changes every ninth step (a new stretch, and back), before a graph
    that reads the loop's array."""
    rs = xp.random.RandomState(65)
    x = xp.ones(64)
    out = []
    for i in range(n):
        k = 64 if i % 9 != 8 else 32
        d = rs.random_sample(k)
        x = x * 0.99 + d.sum() * 0.001
        out.append(fbits(float(x[:k].dot(d[:k]))))
    return out + [host(xp, x)]


def rows_draw_kept_and_read(xp, n):
    """Each step's draw kept by the user past the step (the client's own array) and read by
    the graph after it; written after the loop."""
    rs = xp.random.RandomState(66)
    kept, out = [], []
    acc = xp.zeros(48)
    for i in range(n):
        d = rs.random_sample(48)
        kept.append(d)
        acc = acc + d * 0.5
        out.append(fbits(float(acc.max())))
    for d in kept[::7]:
        d *= 2.0
    return out + [host(xp, xp.stack(kept)), host(xp, acc)]


def rows_eager_product_between(xp, n):
    """A ``tensordot`` (made outside the graphs) between two graphs, its result read by the
    second."""
    a = xp.linspace(-1.0, 1.0, 6 * 8 * 5).reshape(6, 8, 5)
    b = xp.linspace(0.5, 1.5, 8 * 5 * 4).reshape(8, 5, 4)
    s = xp.ones((6, 4))
    out = []
    for i in range(n):
        p = xp.tensordot(a * (1.0 + 1e-3 * (i % 4)), b, axes=2)
        s = s * 0.5 + p * 0.25
        out.append(fbits(float(s.sum())))
    return out + [host(xp, s)]


def rows_draw_reads_an_input(xp, n):
    """A draw before the graph whose size is the input's (the draw itself reads no array) and
    an eager ``take`` of the input by drawn indices first (an eager op that reads an input:
    the inputs copied apart)."""
    rs = xp.random.RandomState(67)
    data = xp.linspace(0.0, 1.0, 300)
    w = xp.zeros(())
    out = []
    for i in range(n):
        idx = rs.randint(0, 300, 16)
        batch = data.take(idx)
        w = w * 0.9 + batch.mean() + rs.random_sample(1)[0] * 1e-3
        out.append(fbits(float(w)))
    return out + [host(xp, w)]


def rows_odd_float32_beside_even(xp, n):
    """float32 normal draws, one odd count (a view) and one even, then a graph."""
    rs = xp.random.RandomState(68)
    out = []
    x = xp.zeros(50, dtype=xp.float32)
    for i in range(n):
        a = rs.normal(0.0, 1.0, 51, dtype=xp.float32)
        b = rs.normal(0.0, 1.0, 50, dtype=xp.float32)
        x = x + a[1:] * b
        out.append(fbits(float(x.astype(xp.float64).sum())))
    return out + [host(xp, x)]


def rows_draw_then_outer(xp, n):
    """A draw, then an eager op on it before the next graph (``outer``: cuBLAS's product of a
    vector by itself): the draw must be in its buffer before that op (found by review)."""
    rs = xp.random.RandomState(69)
    x = xp.zeros((8, 8))
    out = []
    for i in range(n):
        r = rs.standard_normal(8)
        x = x * 0.5 + xp.outer(r, r)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, x)]


def rows_draw_shuffled(xp, n):
    """A draw shuffled in place (an eager op that writes it) before the graph that sums it."""
    rs = xp.random.RandomState(70)
    acc = xp.zeros(16)
    out = []
    for i in range(n):
        q = rs.random_sample(16)
        rs.shuffle(q)
        acc = acc * 0.9 + q
        out.append(fbits(float(acc[:5].sum())))
    return out + [host(xp, acc)]


def rows_draw_written_and_kept(xp, n):
    """A draw the step writes in place (``d *= 0.5``) and keeps: handed out as written (found by
    review; wrong before the seventh campaign too)."""
    rs = xp.random.RandomState(71)
    x = xp.zeros(8)
    out, kept = [], []
    for i in range(n):
        d = rs.rand(8)
        d *= 0.5
        x = x + d
        kept.append(d)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, xp.stack(kept))]


def rows_draw_written_step_fails(xp, n):
    """A draw the step writes (``d *= 0.5``) and a draw after it that raises every tenth step
    (a negative scale, caught): where the step fails before the write, ``d`` is the draw as
    made (found by a second review)."""
    rs = xp.random.RandomState(72)
    x = xp.zeros(8)
    out = []
    for i in range(n):
        d = rs.rand(8)
        try:
            b = rs.normal(0.0, -1.0 if i % 10 == 9 else 1.0, 8)
            d *= 0.5
            y = x * 0.5 + d + b
            out.append(fbits(float(y.sum())))
            x = y
        except ValueError as exc:
            out += [type(exc).__name__, host(xp, d)]
    return out + [host(xp, x)]


def rows_eager_returns_its_operand(xp, n):
    """``real_if_close`` of a real array (an eager op) returns what it is given, a graph's
    temporary; each step's result kept (found by a second review; wrong before too)."""
    x = xp.ones(4)
    out, kept = [], []
    for i in range(n):
        z = xp.real_if_close(x * 0.5)
        x = x + z
        kept.append(z)
        out.append(fbits(float(x.sum())))
    return out + [host(xp, xp.stack(kept))]


PROGRAMS: dict[str, tuple[Callable, int, bool]] = {
    f.__name__: (f, iters, False) for f, iters in [
        (rows_draw_then_in_place, 60),
        (rows_two_draws_no_input, 60),
        (rows_draw_between_graphs, 60),
        (rows_odd_normal_count, 60),
        (rows_size_changes_now_and_then, 72),
        (rows_draw_kept_and_read, 60),
        (rows_eager_product_between, 60),
        (rows_draw_reads_an_input, 60),
        (rows_odd_float32_beside_even, 60),
        (rows_draw_then_outer, 60),
        (rows_draw_shuffled, 60),
        (rows_draw_written_and_kept, 60),
        (rows_draw_written_step_fails, 60),
        (rows_eager_returns_its_operand, 60),
    ]}
