"""Result dtypes of cupyx.scipy.special functions, local CuPy vs the proxy, on a GPU.

Run 10 of CuPy's suite charged the proxy with gammaln/polygamma/beta and fused Bessel
results of another dtype; this prints local CuPy's and the proxy's for each input dtype
(on the H100 of 2026-11-23: none differs; the suite's mismatches are CuPy's own against
SciPy, for dtypes its subsampled baseline did not run: docs/fidelity.md, run 11). Run on
the GPU machine from the repository root, with the wheels as in gpu_check.sh.
"""
from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, ".")
import cupy  # noqa: E402
import cupyx.scipy.special as local_special  # noqa: E402

from gpu_backend.pool import LocalPool  # noqa: E402
import kernelproxy  # noqa: E402
from kernelproxy.modules import build_modules, module_for  # noqa: E402

with LocalPool(devices="0") as pool:
    session = kernelproxy.connect(pool.address, pool.token)
    cp = module_for(session)
    special = build_modules()["cupyx.scipy.special"]
    for name, nargs in (("gammaln", 1), ("j0", 1), ("i0", 1), ("polygamma", 2), ("betaln", 2), ("beta", 2)):
        for dtype in "?bBhHiIlLefd":
            host = (np.arange(1, 7).reshape(2, 3)).astype(dtype)
            try:
                local = getattr(local_special, name)(*[cupy.asarray(host)] * nargs).dtype
            except Exception as exc:
                local = type(exc).__name__
            try:
                remote = getattr(special, name)(*[cp.asarray(host)] * nargs).dtype
            except Exception as exc:
                remote = f"{type(exc).__name__}: {exc}"[:80]
            flag = "" if str(local) == str(remote) else "   <-- differs"
            print(f"{name:10s} {dtype} local {local!s:10s} proxy {remote!s}{flag}")
    # fused, as TestFusionSpecial does (a named function: CuPy names the kernel after it)
    def local_j0(x):
        return local_special.j0(x)

    def remote_j0(x):
        return special.j0(x)

    for dtype in "efd":
        host = np.arange(1, 7).reshape(2, 3).astype(dtype)
        lf = cupy.fuse()(local_j0)(cupy.asarray(host)).dtype
        rf = cp.fuse()(remote_j0)(cp.asarray(host)).dtype
        print(f"fused j0   {dtype} local {lf!s:10s} proxy {rf!s}{'   <-- differs' if lf != rf else ''}")
    session.close()
