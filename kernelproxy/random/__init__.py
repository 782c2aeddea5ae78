"""``cupy.random`` on the client: its generators are objects in the session's worker.

The module functions draw from the current device's global RandomState, exactly
as CuPy's do, so ``seed``, ``get_random_state``/``set_random_state`` and
``cupy.testing.fix_random`` behave as with local CuPy. :func:`build_random_modules`
gives the modules by their CuPy import names.
"""

from __future__ import annotations

import types

import numpy as np

from . import _bit_generator, _distributions, _generator, _generator_api, _permutations, _sample, curand

__all__ = ["build_random_modules"]


def build_random_modules(random: types.ModuleType) -> dict[str, types.ModuleType]:
    """Fill the ``cupy.random`` module *random*; returns it and its submodules by name."""
    random.__dict__.update(
        __path__=[], __package__="cupy.random",
        **{name: getattr(_distributions, name) for name in _distributions.__all__},
        **{name: getattr(_sample, name) for name in _sample.__all__},
        random=_sample.random_sample, ranf=_sample.random_sample, sample=_sample.random_sample,
        shuffle=_permutations.shuffle, permutation=_permutations.permutation,
        RandomState=_generator.RandomState, get_random_state=_generator.get_random_state,
        set_random_state=_generator.set_random_state, reset_states=_generator.reset_states,
        seed=_generator.seed,
        BitGenerator=_bit_generator.BitGenerator, XORWOW=_bit_generator.XORWOW,
        MRG32k3a=_bit_generator.MRG32k3a, Philox4x3210=_bit_generator.Philox4x3210,
        Generator=_generator_api.Generator, default_rng=_generator_api.default_rng,
        bytes=np.random.bytes,   # host bytes, as in CuPy
        _generator=_generator, _distributions=_distributions, _sample=_sample,
        _permutations=_permutations, _bit_generator=_bit_generator, _generator_api=_generator_api,
    )
    return {"cupy.random": random, "cupy.random._generator": _generator,
            "cupy.random._distributions": _distributions, "cupy.random._sample": _sample,
            "cupy.random._permutations": _permutations, "cupy.random._bit_generator": _bit_generator,
            "cupy.random._generator_api": _generator_api, "cupy.cuda.curand": curand}
