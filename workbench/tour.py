"""The code ``gpuwb demo`` runs: plain CuPy, with the import hook installed."""


def tour() -> None:
    import numpy as np

    import cupy as cp

    x = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    print("x =", x)
    y = cp.exp(x / 10) * 2 - 1                  # queued: no round trip yet
    print("y.sum(axis=0) =", y.sum(axis=0))      # a sync point: the values come back
    print("x @ x.T =", x @ x.T)
    host = np.random.default_rng(0).random((512, 512))
    a = cp.asarray(host)                         # sent as one zero-copy frame
    err = cp.abs(cp.linalg.inv(a) @ a - cp.eye(512)).max()
    print("max |inv(a) @ a - I| =", float(err))
    x[x > 5] = -1                                # boolean assignment, in place
    print("masked x =", repr(x.get()))           # back to a NumPy array
    try:
        bad = cp.zeros(3) + cp.zeros(4)          # fails in the pool ...
        print(float(bad.sum()))                  # ... and is raised at this sync point
    except ValueError as exc:
        print("the error kept its class:", type(exc).__name__, "-", exc)
