"""The allow-list: every name a client may ask the pool to run.

Shared by both ends. The client builds its ``cupy`` proxy modules from it
(so a user gets ``AttributeError`` for names the pool will refuse), and the
server resolves names *only* by looking them up here and then in a table it
built at start-up from its own array module. Nothing here reads, writes or
runs files or processes: ``load``, ``save``, ``fromfile``, ``tofile``,
``memmap``, ``loadtxt``, ``genfromtxt``, ``fromfunction``, ``vectorize`` and
their like are absent on purpose.

Each name has a *return kind* that tells the client whether it can answer
without waiting for the pool:

``ARRAY``   one new array: the client names it and goes on (asynchronous)
``NONE``    works in place and returns None (asynchronous)
``MULTI``   a tuple or list of arrays, or an array, depending on the
            arguments: the client waits for the structure (synchronous)
``VALUE``   a Python value (synchronous)
"""

from __future__ import annotations

import numpy as _np

__all__ = [
    "ARRAY", "NONE", "MULTI", "VALUE",
    "FUNCTIONS", "METHODS", "ATTRIBUTES", "OPERATORS", "SUBMODULES",
    "CREATION_WITH_SHAPE", "CUDA_CALLS", "UFUNCS", "UFUNC_METHODS",
]

ARRAY, NONE, MULTI, VALUE = "a", "n", "m", "v"


def _names(text: str, kind: str, prefix: str = "") -> dict[str, str]:
    return {prefix + name: kind for name in text.split()}


#: Submodules of ``cupy`` with proxies (``cupyx`` is a top-level package).
SUBMODULES = ("linalg", "fft", "random")

FUNCTIONS: dict[str, str] = {}
FUNCTIONS.update(_names("""
    array asarray asanyarray ascontiguousarray asfortranarray copy
    empty empty_like zeros zeros_like ones ones_like full full_like
    arange linspace logspace geomspace eye identity diag diagflat tri tril triu vander
    add subtract multiply divide true_divide floor_divide power float_power remainder mod fmod
    negative positive absolute abs fabs sign rint round around fix floor ceil trunc
    exp exp2 expm1 log log2 log10 log1p logaddexp logaddexp2 sqrt cbrt square reciprocal
    sin cos tan arcsin arccos arctan arctan2 hypot sinh cosh tanh arcsinh arccosh arctanh
    deg2rad rad2deg degrees radians unwrap gcd lcm maximum minimum fmax fmin clip
    nan_to_num real imag conj conjugate angle heaviside sinc i0 copysign nextafter signbit ldexp
    isfinite isinf isnan isneginf isposinf isreal iscomplex
    logical_and logical_or logical_xor logical_not
    greater greater_equal less less_equal equal not_equal
    all any allclose isclose array_equal array_equiv
    bitwise_and bitwise_or bitwise_xor bitwise_not invert left_shift right_shift
    packbits unpackbits
    sum prod nansum nanprod cumsum cumprod nancumsum nancumprod diff ediff1d cross
    mean average var std nanmean nanvar nanstd median nanmedian
    percentile quantile nanpercentile nanquantile
    amax amin max min nanmax nanmin ptp argmax argmin nanargmax nanargmin count_nonzero
    bincount digitize corrcoef cov correlate convolve trapezoid
    sort argsort lexsort partition argpartition searchsorted flatnonzero argwhere extract select
    isin intersect1d setdiff1d union1d setxor1d
    reshape ravel transpose swapaxes moveaxis rollaxis squeeze expand_dims broadcast_to
    concatenate stack vstack hstack dstack column_stack
    tile repeat flip fliplr flipud roll rot90 pad take take_along_axis choose compress
    diagonal trace einsum dot vdot inner outer matmul tensordot kron
""", ARRAY))
FUNCTIONS.update(_names("""
    put copyto fill_diagonal place putmask put_along_axis
""", NONE))
FUNCTIONS.update(_names("""
    divmod modf frexp nonzero where unique histogram gradient meshgrid broadcast_arrays
    atleast_1d atleast_2d atleast_3d split array_split hsplit vsplit dsplit
    unravel_index tril_indices triu_indices diag_indices indices
""", MULTI))
FUNCTIONS.update(_names("shares_memory may_share_memory", VALUE))
FUNCTIONS.update(_names("""
    append delete resize trim_zeros require asarray_chkfinite real_if_close astype matrix_transpose
    bartlett blackman hamming hanning kaiser interp sort_complex bitwise_count
    cumulative_sum cumulative_prod ravel_multi_index unique_values piecewise
    poly polyadd polysub polymul polyval roots row_stack
""", ARRAY))
FUNCTIONS.update(_names("""
    diag_indices_from tril_indices_from triu_indices_from ix_ histogram2d histogramdd polyfit
    unique_all unique_counts unique_inverse
""", MULTI))
FUNCTIONS.update(_names("isfortran array2string array_repr array_str", VALUE))

FUNCTIONS.update(_names("""
    norm det inv pinv solve cholesky matrix_power matrix_rank eigvalsh eigvals tensorsolve tensorinv
""", ARRAY, "linalg."))
FUNCTIONS.update(_names("cond matrix_transpose matmul", ARRAY, "linalg."))
FUNCTIONS.update(_names("qr svd eigh eig slogdet lstsq", MULTI, "linalg."))

FUNCTIONS.update(_names("""
    fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft
    fftfreq rfftfreq fftshift ifftshift
""", ARRAY, "fft."))

FUNCTIONS.update(_names("""
    rand randn random random_sample ranf sample randint uniform normal standard_normal
    choice permutation binomial poisson exponential beta gamma
""", ARRAY, "random."))
FUNCTIONS.update(_names("""
    chisquare dirichlet f geometric gumbel hypergeometric laplace logistic lognormal logseries
    multinomial multivariate_normal negative_binomial noncentral_chisquare noncentral_f pareto
    power random_integers rayleigh standard_cauchy standard_exponential standard_gamma
    standard_t triangular vonmises wald weibull zipf
""", ARRAY, "random."))
FUNCTIONS.update(_names("seed shuffle", NONE, "random."))

FUNCTIONS.update(_names("scatter_add scatter_max scatter_min", NONE, "cupyx."))
FUNCTIONS.update(_names("rsqrt", ARRAY, "cupyx."))

#: Ufuncs (allow-listed names that are NumPy ufuncs, as CuPy's are) and their methods,
#: each an allow-listed name of its own: ``add.reduce``, ``multiply.outer``, ``add.at``.
UFUNC_METHODS = {"reduce": ARRAY, "accumulate": ARRAY, "reduceat": ARRAY, "outer": ARRAY,
                 "at": NONE}
UFUNCS = frozenset(name for name in FUNCTIONS
                   if "." not in name and isinstance(getattr(_np, name, None), _np.ufunc))
FUNCTIONS.update({f"{name}.{method}": want for name in sorted(UFUNCS)
                  for method, want in UFUNC_METHODS.items()})

#: Creation functions whose first argument is a shape: the NumPy device checks
#: the bytes they would take against the session's limit before allocating.
CREATION_WITH_SHAPE = frozenset("empty zeros ones full random.rand random.randn".split())

#: ndarray methods, with their return kinds.
METHODS: dict[str, str] = {}
METHODS.update(_names("""
    all any argmax argmin argpartition argsort astype choose clip compress conj conjugate
    copy cumprod cumsum diagonal dot flatten max mean min prod ravel repeat reshape round
    searchsorted squeeze std sum swapaxes take trace transpose var view
""", ARRAY))
METHODS.update(_names("fill sort partition put", NONE))
METHODS.update(_names("nonzero", MULTI))
METHODS.update(_names("item tolist", VALUE))

#: Array attributes that are themselves arrays.
ATTRIBUTES = frozenset("T real imag mT".split())

#: Operators, by the name of their function in the stdlib ``operator`` module
#: (the server maps each to that function; dunder names never travel).
OPERATORS: dict[str, str] = {}
OPERATORS.update(_names("""
    add sub mul truediv floordiv mod pow matmul and_ or_ xor lshift rshift
    lt le eq ne gt ge neg pos abs invert getitem
""", ARRAY))
OPERATORS.update(_names("""
    iadd isub imul itruediv ifloordiv imod ipow imatmul iand ior ixor ilshift irshift setitem
""", NONE))
OPERATORS.update(_names("divmod", MULTI))
#: Conversions to Python values, run by the device's own rules.
OPERATORS.update(_names("float int bool complex index len iter repr str format", VALUE))

#: The session's CUDA runtime calls (``cupy.cuda`` events and memory pool), with their
#: return kinds; the server runs them in ``gpu_backend.worker.cuda_calls``.
CUDA_CALLS: dict[str, str] = {}
CUDA_CALLS.update(_names("event.new event.record event.synchronize pool.free_all_blocks pool.set_limit",
                         NONE))
CUDA_CALLS.update(_names("event.done event.elapsed pool.figures array.data", VALUE))
CUDA_CALLS["array.base"] = MULTI   # a handle, None, or the base stored under the op's id
