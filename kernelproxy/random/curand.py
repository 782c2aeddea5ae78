"""``cupy.cuda.curand``'s generator kinds: the numbers cuRAND's ``curandRngType`` gives them.

``cupy.random.RandomState(method=...)`` takes one; the generator itself is built in
the pool's worker. None of cuRAND's functions is the client's to call.
"""

from __future__ import annotations

CURAND_RNG_TEST = 0
CURAND_RNG_PSEUDO_DEFAULT = 100
CURAND_RNG_PSEUDO_XORWOW = 101
CURAND_RNG_PSEUDO_MRG32K3A = 121
CURAND_RNG_PSEUDO_MTGP32 = 141
CURAND_RNG_PSEUDO_MT19937 = 142
CURAND_RNG_PSEUDO_PHILOX4_32_10 = 161
CURAND_RNG_QUASI_DEFAULT = 200
CURAND_RNG_QUASI_SOBOL32 = 201
CURAND_RNG_QUASI_SCRAMBLED_SOBOL32 = 202
CURAND_RNG_QUASI_SOBOL64 = 203
CURAND_RNG_QUASI_SCRAMBLED_SOBOL64 = 204

__all__ = sorted(name for name in globals() if name.startswith("CURAND_"))
