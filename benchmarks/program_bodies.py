"""The programs ``programs.py`` runs, each as a notebook's user would write it: a function
of ``(xp, size)`` (``xp`` local CuPy, NumPy or the proxy's ``cupy``) that returns a small
host result to compare across sides. ``programs.py`` holds which run, their sizes,
targets and the driver; ``held_loops.py``, ``worker_phases.py``, ``replay_floor.py`` and
``no_sync_steady.py`` take single loops from here.
"""

from __future__ import annotations

import math

import numpy as np


def black_scholes(xp, n):
    rng = np.random.default_rng(1)
    spot = rng.uniform(5, 30, n).astype(np.float32)
    strike = rng.uniform(1, 100, n).astype(np.float32)
    years = rng.uniform(0.25, 10, n).astype(np.float32)
    s, k, t = xp.asarray(spot), xp.asarray(strike), xp.asarray(years)
    rate, vol = 0.02, 0.30
    sqrt_t = xp.sqrt(t)
    d1 = (xp.log(s / k) + (rate + 0.5 * vol * vol) * t) / (vol * sqrt_t)
    d2 = d1 - vol * sqrt_t

    def cnd(d):
        return 0.5 * (1 + _erf(xp, d / math.sqrt(2)))

    discount = xp.exp(-rate * t)
    call = s * cnd(d1) - k * discount * cnd(d2)
    put = k * discount * cnd(-d2) - s * cnd(-d1)
    call_host, put_host = _get(call), _get(put)
    return np.array([call_host.sum(dtype=np.float64), put_host.sum(dtype=np.float64),
                     call_host[12345 % n], put_host[54321 % n]])


def _erf(xp, x):
    """erf by Abramowitz-Stegun 7.1.26 (plain ufuncs: the same code on NumPy and CuPy)."""
    sign = xp.sign(x)
    a = xp.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1 - poly * xp.exp(-a * a))


def kmeans(xp, n, k=8, dims=16, iterations=30):
    rng = np.random.default_rng(2)
    centres_true = rng.normal(0, 5, (k, dims))
    points = (centres_true[rng.integers(0, k, n)] + rng.normal(0, 1, (n, dims))).astype(np.float32)
    x = xp.asarray(points)
    centres = x[xp.asarray(rng.choice(n, k, replace=False))]          # fancy indexing
    labels = None
    for _ in range(iterations):
        distances = ((x[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
        labels = distances.argmin(axis=1)
        onehot = (labels[:, None] == xp.arange(k)[None, :]).astype(xp.float32)
        counts = onehot.sum(axis=0)
        new = (onehot.T @ x) / xp.maximum(counts, 1)[:, None]
        shift = float(xp.abs(new - centres).max())                     # a sync each iteration
        centres = new
        if shift < 1e-4:
            break
    inertia = float(((x - centres[labels]) ** 2).sum())                # fancy indexing again
    return np.array([inertia, float(np.sort(_get(centres).sum(axis=1))[0])])


def conjugate_gradient(xp, n, tol=1e-6, max_iterations=300):
    rng = np.random.default_rng(3)
    m = rng.normal(0, 1, (n, n)).astype(np.float32) / np.sqrt(n)
    a_host = (m @ m.T + 2 * np.eye(n, dtype=np.float32)).astype(np.float32)
    b_host = rng.normal(0, 1, n).astype(np.float32)
    a, b = xp.asarray(a_host), xp.asarray(b_host)
    x = xp.zeros(n, dtype=xp.float32)
    r = b - a @ x
    p = r.copy()
    rs = float(r @ r)
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        ap = a @ p
        alpha = rs / float(p @ ap)
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = float(r @ r)                                          # the residual check
        if math.sqrt(rs_new) < tol * math.sqrt(float(b_host @ b_host)):
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return np.array([float(xp.linalg.norm(a @ x - b)), float(iterations)])


def mlp_training(xp, n, steps=200, batch=256, hidden=256, features=64, classes=10, quiet=True):
    rng = np.random.default_rng(4)
    data = rng.normal(0, 1, (n, features)).astype(np.float32)
    truth = rng.normal(0, 1, (features, classes)).astype(np.float32)
    labels_host = (data @ truth).argmax(axis=1)
    x_all, y_all = xp.asarray(data), xp.asarray(labels_host)
    w1 = xp.asarray((rng.normal(0, 1, (features, hidden)) / np.sqrt(features)).astype(np.float32))
    w2 = xp.asarray((rng.normal(0, 1, (hidden, classes)) / np.sqrt(hidden)).astype(np.float32))
    lr = 0.1
    losses = []
    for step in range(steps):
        idx = xp.asarray(rng.integers(0, n, batch))                    # a small upload per step
        xb, yb = x_all[idx], y_all[idx]                                 # fancy indexing
        h = xp.maximum(xb @ w1, 0)
        logits = h @ w2
        logits = logits - logits.max(axis=1, keepdims=True)
        p = xp.exp(logits)
        p = p / p.sum(axis=1, keepdims=True)
        rows = xp.arange(batch)
        loss = float(-xp.log(p[rows, yb] + 1e-9).mean())               # read every step
        losses.append(loss)
        if not quiet:
            print(f"step {step} loss {loss:.4f}")
        grad = p.copy()
        grad[rows, yb] -= 1
        grad /= batch
        gw2 = h.T @ grad
        gh = (grad @ w2.T) * (h > 0)
        gw1 = xb.T @ gh
        w1 -= lr * gw1
        w2 -= lr * gw2
    return np.array([losses[0], losses[-1], float(_get(w2).sum())])


def stencil(xp, n, steps=200):
    """A 5-point heat-equation step on an n x n grid of slices and elementwise ops, its
    largest change read every step (the kind of loop issue 37 measured at 2.3x)."""
    rng = np.random.default_rng(5)
    u = xp.asarray(rng.random((n, n), dtype=np.float32))
    change = 0.0
    for _ in range(steps):
        lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
        u = u.copy()
        u[1:-1, 1:-1] += 0.2 * lap
        change = float(xp.abs(lap).max())                              # read every step
    return np.array([change, float(u.sum())])


def random_walk(xp, n, steps=200):
    """Random draws in a loop on n-element arrays, one scalar read per step."""
    xp.random.seed(6)
    x = xp.zeros(n, dtype=xp.float32)
    mean = 0.0
    for step in range(steps):
        x += (xp.random.rand(n).astype(xp.float32) - 0.5) * (0.1 + 1e-4 * step)
        mean = float(x.mean())                                          # read every step
    return np.array([mean, float(xp.abs(x).max())])


def hot_sync(xp, n, steps=2000):
    """The hot sync, ``float((x + c).sum())``, in a loop whose scalar changes."""
    x = xp.arange(n, dtype=xp.float32)
    total = 0.0
    for step in range(steps):
        total += float((x + step * 0.5).sum())
    return np.array([total])


# ------------------------------------------------------------------ issue 50's programs
# Loops as a new user writes them: plain Python loops, a scalar read per iteration, no
# tricks (none of them knows about stretch replay).

def chain20_body(x, y):
    """20 elementwise ops on x, y and Python floats, each result feeding the next; the
    result stays in [0, 1) for x, y in [0, 1) (the loop carries it as the next x)."""
    a = x * 1.01
    a = a + y
    b = a - 0.5
    c = b * y
    d = c + x
    e = d * 0.75
    f = e - y
    g = f * f
    h = g + 1.0
    k = x / h
    m = k * 0.9
    n = m + y
    p = n - 0.25
    q = p * p
    r = q * 0.5
    s = r + x
    u = s * y
    v = u + 0.125
    w = v + 1.0
    return v / w


#: the ops of chain20_body, as a user counts them (each one launch in CuPy)
CHAIN20_OPS = 20


def chain20_inputs(xp, n):
    rng = np.random.default_rng(10)
    return (xp.asarray(rng.random(n, dtype=np.float32)), xp.asarray(rng.random(n, dtype=np.float32)))


def held_step(xp, loop):
    """The instruction counters' held loops (held_instructions.py, worker_instructions.py):
    ``chain20`` (its body on 1 K float32, then ``float(x.sum())``) or ``hot_sync``
    (``float((x + 1).sum())`` on 1000 float32) or ``hot_step`` (programs.py's hot sync,
    ``float((x + step * 0.5).sum())``: a float parameter that steps, which the worker's lane
    guesses). Returns (the first state, the step: state -> next state)."""
    if loop == "hot_step":
        def stepping(state):
            x, step = state
            float((x + step * 0.5).sum())
            return x, step + 1
        return (xp.arange(1000, dtype=xp.float32), 0), stepping
    if loop == "chain20":
        x, y = chain20_inputs(xp, 1024)

        def step(x):
            x = chain20_body(x, y)
            float(x.sum())
            return x
        return x, step

    def hot(x):
        float((x + 1).sum())
        return x
    return xp.arange(1000, dtype=xp.float32), hot


def chain20(xp, n, steps=300):
    """The 20-op loop of issue 50: 20 elementwise ops on 1 K float32, carried from one
    iteration to the next, and a scalar read every iteration."""
    x, y = chain20_inputs(xp, n)
    total = 0.0
    for _ in range(steps):
        x = chain20_body(x, y)
        total += float(x.sum())                                         # read every step
    return np.concatenate([[total], _get(x)[:4]])


def heat2d_grid(xp, n):
    """An n x n plate, its top edge held at 1, the rest at 0 (float32)."""
    u = np.zeros((n, n), dtype=np.float32)
    u[0, :] = 1.0
    return xp.asarray(u)


def heat2d_update(u):
    """One explicit step of the 2-D heat equation, in place, by slice assignment; returns
    the step's Laplacian (its norm is the residual)."""
    lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.2 * lap
    return lap


#: the calls of heat2d_update, as a user counts them: 5 slices, 5 arithmetic ops for the
#: Laplacian; a slice, 2 ops and the assignment for the update
HEAT2D_OPS = 14


def heat2d(xp, n, steps=200):
    """A 2-D heat stencil with a slice assignment, its residual read every step."""
    u = heat2d_grid(xp, n)
    residual = 0.0
    for _ in range(steps):
        lap = heat2d_update(u)
        residual = float(xp.linalg.norm(lap))                           # read every step
    return np.array([residual, float(u.sum()), float(u[n // 2, n // 2])])


def monte_carlo_pi(xp, n, steps=100):
    """pi from uniform draws in the square (``random.seed``, ``random.uniform``), one
    estimate read every iteration."""
    xp.random.seed(7)
    estimates = []
    for _ in range(steps):
        x = xp.random.uniform(-1.0, 1.0, n)
        y = xp.random.uniform(-1.0, 1.0, n)
        inside = (x * x + y * y) <= 1.0
        estimates.append(4.0 * float(inside.mean()))                   # read every step
    return np.array([sum(estimates) / steps, estimates[0], estimates[-1]])


def bootstrap_rng(xp, n, steps=100):
    """A bootstrap of a sample's mean with the Generator API (``random.default_rng``): each
    iteration draws resample weights (``rng.random``) and normal noise (``rng.standard_normal``),
    the weighted mean read every iteration."""
    rng = xp.random.default_rng(16)
    sample = xp.asarray(np.random.default_rng(17).standard_normal(n))
    means = []
    for _ in range(steps):
        w = rng.random(n)
        noisy = sample + 0.01 * rng.standard_normal(n)
        means.append(float((w * noisy).sum() / w.sum()))              # read every step
    return np.array([sum(means) / steps, means[0], means[-1]])


def monte_carlo_pi_rng(xp, n, steps=100):
    """Monte Carlo π as a user of the Generator API writes it (``random.default_rng``,
    ``rng.uniform``), the estimate read every iteration."""
    rng = xp.random.default_rng(18)
    estimates = []
    for _ in range(steps):
        x = rng.uniform(-1.0, 1.0, n)
        y = rng.uniform(-1.0, 1.0, n)
        estimates.append(4.0 * float(((x * x + y * y) <= 1.0).mean()))   # read every step
    return np.array([sum(estimates) / steps, estimates[0], estimates[-1]])


def langevin_annealed(xp, n, steps=100, eta=0.05, decay=0.02):
    """Langevin dynamics on a double well (``U = (x**2 - 1)**2``): a gradient step and
    normal noise from a ``RandomState`` whose scale anneals with the step size
    (``rs.normal(0.0, math.sqrt(2 * eta_t), n)``: a scalar of the draw's own that changes
    every step), the mean energy read every step."""
    rs = xp.random.RandomState(21)
    x = xp.zeros(n)
    energies = []
    for step in range(steps):
        eta_t = eta / (1.0 + decay * step)
        grad = 4.0 * x * (x * x - 1.0)
        x = x - eta_t * grad + rs.normal(0.0, math.sqrt(2.0 * eta_t), n)
        energies.append(float(((x * x - 1.0) ** 2).mean()))          # read every step
    return np.array([sum(energies) / steps, energies[0], energies[-1]])


def ista_continuation(xp, n, steps=200, features=256, lr_scale=0.9):
    """A LASSO by ISTA with continuation, as a notebook writes it: a gradient step, then soft
    thresholding by ``cupy.clip(v, -t, t)`` at a threshold that shrinks every step (a
    function's scalar that changes), the objective read every step."""
    rng = np.random.default_rng(22)
    a_host = rng.standard_normal((n, features)).astype(np.float32) / np.float32(math.sqrt(n))
    b_host = (a_host @ (rng.standard_normal(features) * (rng.random(features) < 0.1))
              ).astype(np.float32)
    A, b = xp.asarray(a_host), xp.asarray(b_host)
    lr = lr_scale / float(np.linalg.norm(a_host, 2) ** 2)
    x = xp.zeros(features, dtype=xp.float32)
    lam = 0.5
    objective = []
    for _ in range(steps):
        r = A @ x - b
        v = x - lr * (A.T @ r)
        x = v - xp.clip(v, -lr * lam, lr * lam)                         # soft thresholding
        lam = max(lam * 0.98, 0.01)
        objective.append(float(0.5 * (r * r).sum() + lam * xp.abs(x).sum()))   # read
    return np.array([objective[0], objective[-1], float(xp.abs(x).sum())])


def mc_option(xp, n, steps=100):
    """A European call priced by Monte Carlo from normal draws of a ``RandomState``, the
    running price read every iteration."""
    rs = xp.random.RandomState(8)
    spot, strike, rate, vol, years = 100.0, 105.0, 0.03, 0.2, 1.0
    drift = (rate - 0.5 * vol * vol) * years
    spread = vol * math.sqrt(years)
    discount = math.exp(-rate * years)
    prices = []
    for _ in range(steps):
        z = rs.standard_normal(n)
        end = spot * xp.exp(drift + spread * z)
        payoff = xp.maximum(end - strike, 0.0)
        prices.append(discount * float(payoff.mean()))                  # read every step
    return np.array([sum(prices) / steps, prices[0], prices[-1]])


def nbody(xp, n, steps=50, dt=1e-3, soft=1e-2):
    """All-pairs gravity on n bodies: forces, velocities and positions updated, the total
    energy read every step."""
    rng = np.random.default_rng(9)
    pos = xp.asarray(rng.normal(0, 1, (n, 3)).astype(np.float32))
    vel = xp.asarray(rng.normal(0, 0.1, (n, 3)).astype(np.float32))
    mass = xp.asarray(rng.uniform(0.5, 1.5, n).astype(np.float32) / n)
    energies = []
    for _ in range(steps):
        d = pos[None, :, :] - pos[:, None, :]                           # (n, n, 3): i to j
        r2 = (d * d).sum(axis=2) + soft * soft
        inv_r = 1.0 / xp.sqrt(r2)
        inv_r3 = inv_r * inv_r * inv_r
        acc = (d * (mass[None, :] * inv_r3)[:, :, None]).sum(axis=1)
        vel = vel + dt * acc
        pos = pos + dt * vel
        kinetic = 0.5 * (mass[:, None] * vel * vel).sum()
        potential = -0.5 * (mass[:, None] * mass[None, :] * inv_r).sum()
        energies.append(float(kinetic + potential))                    # read every step
    return np.array([energies[0], energies[-1], float(_get(pos).sum())])


def _labelled(xp, n, features, seed):
    """Host data for the logistic regressions: *n* rows of *features* normal values and
    their noisy linear labels, uploaded, and zero weights."""
    rng = np.random.default_rng(seed)
    data = rng.normal(0, 1, (n, features)).astype(np.float32)
    truth = rng.normal(0, 1, features).astype(np.float32)
    labels = (data @ truth + rng.normal(0, 0.5, n) > 0).astype(np.float32)
    return xp.asarray(data), xp.asarray(labels), xp.zeros(features, dtype=xp.float32)


def logistic_regression(xp, n, steps=200, features=32, lr=0.5):
    """Logistic regression by gradient descent on host data: X @ w, the sigmoid, the
    gradient, ``w -= lr * grad``, the loss read every step."""
    x, y, w = _labelled(xp, n, features, seed=11)
    loss = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + xp.exp(-(x @ w)))
        grad = x.T @ (p - y) / n
        w -= lr * grad
        loss = float(-(y * xp.log(p + 1e-7) + (1 - y) * xp.log(1 - p + 1e-7)).mean())   # read every step
    return np.array([loss, float(_get(w).sum())])


def lr_decay(xp, n, steps=200, features=32, lr=0.8, gamma=0.99):
    """Logistic regression whose learning rate decays every step as a notebook's schedule
    does (``lr *= 0.99``): ``w -= lr * grad`` in place, the loss read every step (a float
    that decays and a step that writes its input)."""
    x, y, w = _labelled(xp, n, features, seed=12)
    loss = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + xp.exp(-(x @ w)))
        w -= lr * (x.T @ (p - y) / n)
        lr *= gamma
        loss = float(-(y * xp.log(p + 1e-7) + (1 - y) * xp.log(1 - p + 1e-7)).mean())   # read every step
    return np.array([loss, float(_get(w).sum())])


def loss_and_accuracy(xp, n, steps=200, features=16, lr=0.5):
    """Logistic regression that prints its loss *and* its accuracy every step, as a training
    loop often does: two reads a step, so its body is two stretches taking turns (the step
    and the loss; the accuracy), neither following itself."""
    x, y, w = _labelled(xp, n, features, seed=13)
    loss = accuracy = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + xp.exp(-(x @ w)))
        grad = x.T @ (p - y) / n
        w -= lr * grad
        loss = float(-(y * xp.log(p + 1e-7) + (1 - y) * xp.log(1 - p + 1e-7)).mean())
        accuracy = float(((p > 0.5) == (y > 0.5)).mean())
    return np.array([loss, accuracy, float(_get(w).sum())])


def no_sync_loop(xp, n, steps=200):
    """A loop with no read in it: 200 steps of an elementwise update (a damped
    relaxation towards 0.5), one read at the end."""
    rng = np.random.default_rng(12)
    u = xp.asarray(rng.random(n, dtype=np.float32))
    v = xp.zeros(n, dtype=xp.float32)
    for _ in range(steps):
        v = 0.9 * v + 0.1 * (0.5 - u)
        u = u + 0.05 * v
    return np.array([float(u.sum()), float(xp.abs(v).max())])          # the one read


def wave_no_sync(xp, n, steps=300, c2=0.25):
    """A 1-D wave by leapfrog with a slice assignment into a copy, the two time levels
    swapped by name each step; no read in the loop, one after it."""
    rng = np.random.default_rng(14)
    u_prev = xp.asarray(np.sin(np.linspace(0, 8 * np.pi, n)).astype(np.float32)
                        + rng.normal(0, 0.01, n).astype(np.float32))
    u = u_prev.copy()
    for _ in range(steps):
        lap = u[:-2] - 2.0 * u[1:-1] + u[2:]
        u_next = u.copy()
        u_next[1:-1] = 2.0 * u[1:-1] - u_prev[1:-1] + c2 * lap
        u_prev, u = u, u_next
    return np.array([float(u.sum()), float(xp.abs(u).max())])          # the one read


def momentum_no_sync(xp, n, steps=300, lr=0.01):
    """Gradient descent with momentum on a separable quadratic, updated in place (``*=``,
    ``+=``, ``-=``), the squared gradient norm summed on the device each step (a 0-d
    array, never read in the loop); one read after it."""
    rng = np.random.default_rng(15)
    a = xp.asarray((rng.random(n) + 0.5).astype(np.float32))
    x = xp.ones(n, dtype=xp.float32)
    m = xp.zeros(n, dtype=xp.float32)
    total = xp.zeros((), dtype=xp.float32)
    for _ in range(steps):
        g = a * x - 1.0
        m *= 0.9
        m += g
        x -= lr * m
        total += (g * g).sum()
    return np.array([float(total), float(x.sum())])                    # the one read


def sgd_minibatch(xp, n, steps=200, batch=512, features=32, lr=0.05):
    """Linear regression by minibatch SGD: each step uploads its minibatch's indices (a
    small host array) and picks rows by them, the batch's loss read every step."""
    rng = np.random.default_rng(13)
    data = rng.normal(0, 1, (n, features)).astype(np.float32)
    truth = rng.normal(0, 1, features).astype(np.float32)
    target = (data @ truth + rng.normal(0, 0.1, n)).astype(np.float32)
    x_all, y_all = xp.asarray(data), xp.asarray(target)
    w = xp.zeros(features, dtype=xp.float32)
    losses = []
    for _ in range(steps):
        idx = xp.asarray(rng.integers(0, n, batch))                    # an upload every step
        xb, yb = x_all[idx], y_all[idx]
        err = xb @ w - yb
        losses.append(float((err * err).mean()))                       # read every step
        w -= lr * (xb.T @ err) / batch
    return np.array([losses[0], losses[-1], float(_get(w).sum())])


def sgd_slices(xp, n, steps=200, batch=512, features=32, lr=0.05):
    """Linear regression by minibatch SGD over the data in order, each minibatch a slice
    ``x_all[j:j + batch]`` at an offset that moves every step (the bounds are stretch
    parameters: docs/stretch-replay.md, "Slices whose bounds move"), the batch's loss read
    every step."""
    rng = np.random.default_rng(14)
    data = rng.normal(0, 1, (n, features)).astype(np.float32)
    truth = rng.normal(0, 1, features).astype(np.float32)
    target = (data @ truth + rng.normal(0, 0.1, n)).astype(np.float32)
    x_all, y_all = xp.asarray(data), xp.asarray(target)
    w = xp.zeros(features, dtype=xp.float32)
    losses = []
    for step in range(steps):
        j = (step * batch) % (n - batch)
        xb, yb = x_all[j:j + batch], y_all[j:j + batch]
        err = xb @ w - yb
        losses.append(float((err * err).mean()))                       # read every step
        w -= lr * (xb.T @ err) / batch
    return np.array([losses[0], losses[-1], float(_get(w).sum())])


def fused_loop(xp, n, steps=200):
    """A damped oscillator stepped by ``cupy.fuse`` functions, written as CuPy's documentation
    writes them: a fused update of the velocities (two Python scalars as parameters) and a
    fused reduction of the energy, read every ten steps (NumPy: the functions unfused)."""
    fuse = getattr(xp, "fuse", lambda f: f)

    @fuse
    def velocity(v, x, k, damping):
        return v * damping - x * k

    @fuse
    def moved(x, v, dt):
        return x + v * dt

    @fuse
    def energy(x, v):
        return xp.sum(x * x + v * v)

    x = xp.linspace(-1, 1, n, dtype=xp.float32)
    v = xp.zeros(n, dtype=xp.float32)
    readings = []
    for i in range(steps):
        v = velocity(v, x, 0.01, 0.999)
        x = moved(x, v, 0.5)
        if i % 10 == 9:
            readings.append(float(energy(x, v)))
    return np.array(readings + [float(_get(x)[n // 3]), float(_get(v)[n // 7])])


def _get(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)
