"""CuPy's random generators, stood in for by NumPy's on the NumPy device.

``cupy.random.RandomState``, ``Generator`` and the cuRAND bit generators take a
``dtype`` where NumPy's methods do not, return a 0-d array where NumPy returns a
scalar (the worker turns scalars into arrays), and seed with any integer below
2**64. These classes give NumPy's generators those signatures, so the NumPy
device answers the same remote-object ops as a GPU. The numbers differ from
cuRAND's (no NumPy generator is XORWOW): only the distributions match.
"""

from __future__ import annotations

import copy
import inspect
import math
from typing import Any, Callable

import numpy as np

__all__ = ["HostRandomState", "HostGenerator", "HostBitGenerator", "HOST_BIT_GENERATORS",
           "seed_sequence_factory", "host_generator_state", "set_host_generator_state"]

#: RandomState methods whose dtype must be float32 or float64 (those CuPy checks: they
#: call cuRAND's float generators); the others cast their samples to any dtype.
_FLOAT_METHODS = frozenset("normal lognormal random_sample standard_normal uniform".split())
#: RandomState methods with CuPy's trailing dtype parameter that NumPy's lack.
_DTYPE_METHODS = frozenset("""
    beta binomial chisquare dirichlet exponential f gamma geometric gumbel hypergeometric laplace
    logistic lognormal logseries multivariate_normal negative_binomial noncentral_chisquare
    noncentral_f normal pareto poisson power rayleigh standard_cauchy standard_exponential
    standard_gamma standard_normal standard_t triangular uniform vonmises wald weibull zipf
    random_sample
""".split())
_INT_DEFAULT = frozenset("binomial geometric hypergeometric logseries negative_binomial poisson zipf".split())
_UINT64 = 1 << 64


def _float_dtype(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.char not in "fd":
        raise TypeError("cupy.random only supports float32 and float64")
    return dtype


def _cast(result: Any, dtype: np.dtype) -> Any:
    return np.asarray(result).astype(dtype, copy=False)


#: (type, method name) -> how many parameters NumPy's method takes: inspect's signature is
#: worked out once per method, not at every draw (it was a third of a drawing loop's worker
#: time on the NumPy device)
_PARAMETERS: dict[tuple, int] = {}


def _with_dtype(fn: Callable, check: Callable, default: Any) -> Callable:
    """*fn* with CuPy's trailing ``dtype`` parameter (keyword, or the positional argument
    after all of NumPy's), which NumPy's method lacks: the sample is cast to it."""
    key = (type(getattr(fn, "__self__", None)), fn.__name__)
    count = _PARAMETERS.get(key)
    if count is None:
        count = _PARAMETERS[key] = len(inspect.signature(fn).parameters)

    def sample(*args: Any, **kwargs: Any) -> Any:
        dtype = kwargs.pop("dtype", default)
        if len(args) > count:
            if len(args) > count + 1:
                raise TypeError(f"{fn.__name__}() takes at most {count + 1} positional arguments")
            args, dtype = args[:count], args[count]
        return _cast(fn(*args, **kwargs), check(dtype))
    return sample


class HostRandomState:
    """``cupy.random.RandomState`` over ``numpy.random.RandomState``."""

    def __init__(self, seed: int | None = None, method: int | None = None) -> None:
        self.method = method
        self._rs = np.random.RandomState()
        self.seed(seed)

    def seed(self, seed: int | None = None) -> None:
        if seed is None:
            self._rs.seed()
            return
        if type(seed) is not int or not 0 <= seed < _UINT64:
            raise ValueError("Seed must be an integer between 0 and 2**64 - 1")
        self._rs.seed([seed & 0xFFFFFFFF, seed >> 32])   # NumPy's seeds are 32-bit words

    def rand(self, *size: int, dtype: Any = float) -> Any:
        return self.random_sample(size=size, dtype=dtype)

    def randn(self, *size: int, dtype: Any = float) -> Any:
        return self.normal(size=size, dtype=dtype)

    def multivariate_normal(self, mean, cov, size=None, check_valid="ignore", tol=1e-08,
                            method="cholesky", dtype=float) -> Any:
        # NumPy's RandomState decomposes by SVD only; CuPy's method picks the factorisation
        return _cast(self._rs.multivariate_normal(mean, cov, size, check_valid, tol),
                     _float_dtype(dtype))

    def _interval(self, mx: Any, size: Any) -> Any:
        """Integers in [0, mx], uint32 where mx fits 32 bits (CuPy's rule)."""
        bound = np.asarray(mx)
        if (bound < 0).any():
            raise ValueError(f"mx must be non-negative (actual: {mx})")
        dtype = np.uint32 if (bound <= 0xFFFFFFFF).all() else np.uint64
        return self._rs.randint(0, bound.astype(np.uint64) + 1, size=size, dtype=dtype)

    def randint(self, low, high=None, size=None, dtype="l") -> Any:
        return self._rs.randint(low, high, size, dtype)

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("_"):
            raise AttributeError(name)
        fn = getattr(self._rs, name)   # only allow-listed names are ever asked for
        if name not in _DTYPE_METHODS:
            return fn
        return _with_dtype(fn, _float_dtype if name in _FLOAT_METHODS else np.dtype,
                           "l" if name in _INT_DEFAULT else float)


class HostBitGenerator:
    """``cupy.random.BitGenerator``: a SeedSequence and NumPy's Philox under it."""

    def __init__(self, seed: Any = None, *, size: int = -1) -> None:
        self._seed_seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        self.bits = np.random.Philox(self._seed_seq)

    def random_raw(self, size: Any = None, output: bool = True) -> Any:
        shape = () if size is None else size
        count = math.prod(shape) if isinstance(shape, tuple) else int(shape)
        raw = (self.bits.random_raw(count) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        return raw.reshape(shape) if output else None


#: One class per cuRAND generator, so that the kinds stay distinct as in CuPy.
HOST_BIT_GENERATORS = {name: type(name, (HostBitGenerator,), {"__module__": __name__})
                       for name in ("XORWOW", "MRG32k3a", "Philox4x3210")}

#: Generator methods whose NumPy counterpart has no dtype parameter.
_GENERATOR_CASTS = frozenset({"uniform", "beta"})


class HostGenerator:
    """``cupy.random.Generator`` over ``numpy.random.Generator``."""

    def __init__(self, bit_generator: HostBitGenerator) -> None:
        self.bit_generator = bit_generator

    @property
    def bit_generator(self) -> HostBitGenerator:
        return self._bit_generator

    @bit_generator.setter
    def bit_generator(self, value: HostBitGenerator) -> None:
        if not isinstance(value, HostBitGenerator):
            raise TypeError("a Generator needs a cupy.random BitGenerator")
        self._bit_generator = value
        self._gen = np.random.Generator(value.bits)

    def __getattr__(self, name: str) -> Callable:
        if name.startswith("_"):
            raise AttributeError(name)
        fn = getattr(self._gen, name)   # only allow-listed names are ever asked for
        return _with_dtype(fn, _float_dtype, np.float64) if name in _GENERATOR_CASTS else fn


def host_generator_state(generator: Any) -> Any:
    """A copy of a HostGenerator's state: its NumPy bit generator's (``state``, with any
    buffered values); None for anything else."""
    bits = getattr(getattr(generator, "bit_generator", None), "bits", None)
    return copy.deepcopy(bits.state) if isinstance(bits, np.random.BitGenerator) else None


def set_host_generator_state(generator: Any, state: Any) -> None:
    """Put back a state :func:`host_generator_state` copied."""
    generator.bit_generator.bits.state = state


def seed_sequence_factory(cls: type) -> Callable:
    """A bit generator's constructor that also takes a SeedSequence's entropy, spawn key and
    pool size (``spawn_key=``, ``pool_size=``): a client's SeedSequence travels as those."""

    def make(seed: Any = None, *, spawn_key: Any = None, pool_size: Any = None, **kwargs: Any):
        if spawn_key is not None or pool_size is not None:
            seed = np.random.SeedSequence(seed, spawn_key=tuple(spawn_key or ()),
                                          pool_size=4 if pool_size is None else pool_size)
        return cls(seed, **kwargs)

    make.__name__ = cls.__name__
    return make
