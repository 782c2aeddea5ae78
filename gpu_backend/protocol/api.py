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
``ARRAYS``  (never in the tables below) a MULTI name's call whose structure the
            client knows from its arguments, *n* arrays (``divmod``, ``split(x, 4)``,
            ``meshgrid(x, y)``): the client names each (``out`` a list of ids) and
            goes on (asynchronous; kernelproxy/result_structures.py)
``VALUE``   a Python value (synchronous)
``OBJECT``  a new remote object (``lti.to_ss()``): the worker keeps it under the op's id
            and answers the name of its type, for the client to build its stand-in
            (synchronous)
"""

from __future__ import annotations

import numpy as _np

__all__ = [
    "ARRAY", "NONE", "MULTI", "VALUE", "OBJECT", "ARRAYS",
    "FUNCTIONS", "METHODS", "ATTRIBUTES", "OPERATORS", "SUBMODULES", "POLYNOMIAL_SUBMODULES",
    "CREATION_WITH_SHAPE", "CUDA_CALLS", "UFUNCS", "UFUNC_METHODS", "OBJECTS", "OBJECT_SETTERS",
    "OBJECT_GETTERS", "OBJECT_MEMBERS", "JIT_NAMES", "JIT_EXPRESSIONS", "LTI_CLASSES", "SPARSE_CLASSES", "SPARSE_FUNCTIONS", "SPARSE_LU_FUNCTIONS",
    "EITHER", "SPECIAL_UFUNCS", "FFT_CALLBACK_OPTIONS",
    "FFT_PLAN_CACHE_OPERATIONS",
]

ARRAY, NONE, MULTI, VALUE, OBJECT = "a", "n", "m", "v", "o"
ARRAYS = "t"
#: (in OBJECTS only) a method whose result is a new object or an array as its operand
#: says (``a @ b`` of two sparse matrices is a matrix, ``a @ x`` of a matrix and an array
#: an array): the client asks for the one it expects, and the worker checks it got that
EITHER = "e"


def _names(text: str, kind: str, prefix: str = "") -> dict[str, str]:
    return {prefix + name: kind for name in text.split()}


#: Submodules of ``cupy`` whose functions are allow-listed by name (``cupy.random`` works
#: through remote objects, see OBJECTS; ``cupyx`` is a top-level package).
SUBMODULES = ("linalg", "fft")

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
FUNCTIONS.update(_names("isfortran array2string array_repr array_str make_aligned_dtype", VALUE))

FUNCTIONS.update(_names("""
    norm det inv pinv solve cholesky matrix_power matrix_rank eigvalsh eigvals tensorsolve tensorinv
""", ARRAY, "linalg."))
FUNCTIONS.update(_names("cond matrix_transpose matmul cross", ARRAY, "linalg."))
FUNCTIONS.update(_names("qr svd eigh eig slogdet lstsq", MULTI, "linalg."))

FUNCTIONS.update(_names("""
    fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft
    fftfreq rfftfreq fftshift ifftshift
""", ARRAY, "fft."))

#: ``cupy.polynomial`` (the power series of NumPy's ``numpy.polynomial``, lowest power first)
POLYNOMIAL_SUBMODULES = ("polynomial", "polyutils")
FUNCTIONS.update(_names("polyvander polycompanion polyval polyvalfromroots", ARRAY,
                        "polynomial.polynomial."))
FUNCTIONS.update(_names("trimseq trimcoef", ARRAY, "polynomial.polyutils."))
FUNCTIONS.update(_names("as_series", MULTI, "polynomial.polyutils."))

FUNCTIONS.update(_names("scatter_add scatter_max scatter_min", NONE, "cupyx."))
FUNCTIONS.update(_names("rsqrt", ARRAY, "cupyx."))

#: ``cupyx.scipy``: each submodule's public functions (CuPy 14). The worker resolves them on
#: first use (importing those modules costs seconds). Results are structured (``MULTI``:
#: arrays, tuples, dicts, scalars) unless the function always returns one array.
SCIPY_SUBMODULES = ("special", "ndimage", "signal", "signal.windows", "signal._iir_utils",
                    "signal._iir_filter_conversions", "signal._savitzky_golay", "fft",
                    "fftpack", "linalg", "sparse.linalg")
FUNCTIONS.update(_names("""
    bdtr bdtrc bdtri beta betainc betaincinv betaln binom boxcox boxcox1p btdtr btdtri cbrt chdtr
    chdtrc chdtri cosdg cosm1 cotdg digamma ellipeinc ellipk ellipkinc ellipkm1 entr erf erfc
    erfcinv erfcx erfinv exp1 exp10 exp2 expi expit expm1 expn exprel fdtr fdtrc fdtri gamma
    gammainc gammaincc gammainccinv gammaincinv gammaln gammasgn gdtr gdtrc huber i0 i0e i1 i1e
    inv_boxcox inv_boxcox1p j0 j1 k0 k0e k1 k1e kl_div lambertw log1p log_expit log_ndtr
    log_softmax loggamma logit lpmv multigammaln nbdtr nbdtrc nbdtri ndtr ndtri pdtr pdtrc pdtri
    poch polygamma pseudo_huber psi radian rel_entr rgamma round sindg softmax sph_harm_y
    spherical_yn tandg wright_bessel xlog1py xlogy y0 y1 yn zeta zetac sinc
""", ARRAY, "cupyx.scipy.special."))
FUNCTIONS.update(_names("ellipj shichi sici logsumexp", MULTI, "cupyx.scipy.special."))
#: The functions of ``cupyx.scipy.special`` that are ``cupy.ufunc`` objects in CuPy 14 and
#: ufuncs in SciPy too (so ``scipy.special.gamma(x)`` of a CuPy array runs CuPy's)
SPECIAL_UFUNCS = frozenset("""
    bdtr bdtrc bdtri beta betainc betaincinv betaln binom boxcox boxcox1p cbrt chdtr chdtrc
    chdtri cosdg cosm1 cotdg digamma ellipeinc ellipj ellipk ellipkinc ellipkm1 entr erf erfc
    erfcinv erfcx erfinv exp1 exp10 exp2 expi expit expm1 expn exprel fdtr fdtrc fdtri gamma
    gammainc gammaincc gammainccinv gammaincinv gammaln gammasgn gdtr gdtrc huber i0 i0e i1 i1e
    inv_boxcox inv_boxcox1p j0 j1 k0 k0e k1 k1e kl_div log1p log_expit log_ndtr loggamma logit
    lpmv nbdtr nbdtrc nbdtri ndtr ndtri pdtr pdtrc pdtri poch pseudo_huber psi radian rel_entr
    rgamma shichi sici sindg tandg wright_bessel xlog1py xlogy y0 y1 yn zetac
""".split())
FUNCTIONS.update(_names("""
    affine_transform binary_closing binary_dilation binary_erosion binary_fill_holes
    binary_hit_or_miss binary_opening binary_propagation black_tophat convolve convolve1d
    correlate correlate1d fourier_ellipsoid fourier_gaussian fourier_shift fourier_uniform
    gaussian_filter gaussian_filter1d gaussian_gradient_magnitude gaussian_laplace
    generic_gradient_magnitude generic_laplace grey_closing grey_dilation grey_erosion
    grey_opening laplace map_coordinates maximum_filter maximum_filter1d median_filter
    minimum_filter minimum_filter1d morphological_gradient morphological_laplace
    percentile_filter prewitt rank_filter rotate shift sobel spline_filter spline_filter1d
    uniform_filter uniform_filter1d white_tophat zoom generate_binary_structure iterate_structure
""", ARRAY, "cupyx.scipy.ndimage."))
FUNCTIONS.update(_names("""
    center_of_mass distance_transform_edt extrema find_objects histogram label
    labeled_comprehension maximum maximum_position mean median minimum minimum_position
    standard_deviation sum sum_labels value_indices variance
""", MULTI, "cupyx.scipy.ndimage."))
FUNCTIONS.update(_names("""
    abcd_normalize argrelextrema argrelmax argrelmin band_stop_obj bilinear bilinear_zpk bode
    buttap butter buttord cheb1ap cheb1ord cheb2ap cheb2ord cheby1 cheby2 check_COLA check_NOLA
    chirp choose_conv_method coherence cont2discrete convolve convolve2d correlate correlate2d
    correlation_lags csd cspline1d cspline1d_eval cspline2d cwt czt czt_points dbode decimate deconvolve
    detrend dfreqresp dimpulse dlsim dstep ellip ellipap ellipord fftconvolve filtfilt find_peaks
    findfreqs firls firwin firwin2 freqresp freqs freqs_zpk freqz freqz_sos freqz_zpk gammatone
    gauss_spline gausspulse get_window group_delay hilbert hilbert2 iircomb iirdesign iirfilter
    iirnotch iirpeak impulse invres invresz istft kaiser_atten kaiser_beta kaiserord lfilter
    lfilter_zi lfiltic lombscargle lp2bp lp2bp_zpk lp2bs lp2bs_zpk lp2hp lp2hp_zpk lp2lp
    lp2lp_zpk lsim max_len_seq medfilt medfilt2d minimum_phase morlet morlet2 normalize
    oaconvolve order_filter peak_prominences peak_widths periodogram place_poles qmf qspline1d
    qspline1d_eval qspline2d resample resample_poly residue residuez ricker savgol_coeffs
    savgol_filter sawtooth sepfir2d sos2tf sos2zpk sosfilt sosfilt_zi sosfiltfilt sosfreqz
    spectrogram spline_filter square ss2tf ss2zpk step stft sweep_poly symiirorder1 symiirorder2
    tf2sos tf2ss tf2zpk unique_roots unit_impulse upfirdn vectorstrength welch wiener zoom_fft
    zpk2sos zpk2ss zpk2tf
""", MULTI, "cupyx.scipy.signal."))
FUNCTIONS.update(_names("""
    barthann bartlett blackman blackmanharris bohman boxcar chebwin cosine exponential flattop
    gaussian general_cosine general_gaussian general_hamming hamming hann kaiser
    kaiser_bessel_derived lanczos nuttall parzen taylor triang tukey
""", ARRAY, "cupyx.scipy.signal.windows."))
FUNCTIONS.update(_names("get_window", MULTI, "cupyx.scipy.signal.windows."))
#: ``lfilter``'s and ``sosfilt``'s block-parallel recurrences: private to CuPy, but its test
#: suite calls them directly (plain array functions, nothing of the caller's runs)
FUNCTIONS.update(_names("apply_iir", ARRAY, "cupyx.scipy.signal._iir_utils."))
FUNCTIONS.update(_names("apply_iir_sos", MULTI, "cupyx.scipy.signal._iir_utils."))
#: likewise two helpers of filter design that the suite tests on their own
FUNCTIONS.update(_names("_cplxreal", MULTI, "cupyx.scipy.signal._iir_filter_conversions."))
FUNCTIONS.update(_names("_polyder", ARRAY, "cupyx.scipy.signal._savitzky_golay."))
FUNCTIONS.update(_names("""
    dct dctn dst dstn fft fft2 fftfreq fftn fftshift fht hfft hfft2 hfftn idct idctn idst idstn
    ifft ifft2 ifftn ifftshift ifht ihfft ihfft2 ihfftn irfft irfft2 irfftn rfft rfft2 rfftfreq
    rfftn
""", ARRAY, "cupyx.scipy.fft."))
FUNCTIONS.update(_names("next_fast_len", VALUE, "cupyx.scipy.fft."))
FUNCTIONS.update(_names("fft ifft fft2 ifft2 fftn ifftn rfft irfft", ARRAY, "cupyx.scipy.fftpack."))
FUNCTIONS.update(_names("""
    block_diag circulant companion convolution_matrix dft expm fiedler fiedler_companion hadamard
    hankel helmert hilbert khatri_rao leslie lu_solve solve_triangular toeplitz
""", ARRAY, "cupyx.scipy.linalg."))
FUNCTIONS.update(_names("bandwidth lu lu_factor", MULTI, "cupyx.scipy.linalg."))
# sparse solvers and norms: matrices of the session travel as handles; the results are
# arrays, (x, info) and the like, or a norm (no callbacks: a client's function stays there)
FUNCTIONS.update(_names("spsolve spsolve_triangular", ARRAY, "cupyx.scipy.sparse.linalg."))
FUNCTIONS.update(_names("norm cg cgs gmres minres lsqr lsmr eigsh svds", MULTI,
                        "cupyx.scipy.sparse.linalg."))
# the module's function that gives arrays: (row, col, data) of the nonzero entries
FUNCTIONS.update(_names("find", MULTI, "cupyx.scipy.sparse."))

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
CREATION_WITH_SHAPE = frozenset(
    "empty zeros ones full random.RandomState.rand random.RandomState.randn".split())

#: ndarray methods, with their return kinds.
METHODS: dict[str, str] = {}
METHODS.update(_names("""
    all any argmax argmin argpartition argsort astype byteswap choose clip compress conj
    conjugate copy cumprod cumsum diagonal dot flatten max mean min prod ravel repeat reshape round
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
CUDA_CALLS.update(_names("event.new event.record event.synchronize pool.free_all_blocks pool.set_limit "
                         "fft.nd_planning core.accelerators", NONE))
CUDA_CALLS.update(_names("event.done event.elapsed pool.figures array.data", VALUE))
#: ``ufunc.types`` of one of the device's ufuncs (an allow-listed name): CuPy's loops
#: differ from NumPy's for some (``divide``'s ``qq->d``, no ``O``/``g`` loops)
CUDA_CALLS["ufunc.types"] = VALUE
#: cuFFT JIT callbacks (``cupy.fft.config.set_cufft_callbacks``): entered (waits: CuPy
#: compiles the sources with NVRTC there) and left in op order; cuFFT's version
CUDA_CALLS.update(_names("fft.callbacks fft.version", VALUE))
#: the session's cuFFT plan cache (``cupy.fft.config``'s functions of it), by operation
CUDA_CALLS["fft.plan_cache"] = VALUE
FFT_PLAN_CACHE_OPERATIONS = {
    "clear": "clear_plan_cache", "get_size": "get_plan_cache_size",
    "set_size": "set_plan_cache_size", "get_memsize": "get_plan_cache_max_memsize",
    "set_memsize": "set_plan_cache_max_memsize", "show_info": "show_plan_cache_info"}
CUDA_CALLS["fft.callbacks_exit"] = NONE
#: the options of set_cufft_callbacks a client may give (sources as CUDA C++ strings; an
#: aux array as the array; data as [address, bytes] inside the session's own memory)
FFT_CALLBACK_OPTIONS = frozenset("""
    cb_load cb_store cb_load_aux_arr cb_store_aux_arr cb_load_name cb_store_name cb_load_data
    cb_store_data cb_ver nvrtc_options
""".split())
#: CuPy's accelerators (``cupy._core._accelerator``): by name or by CuPy's number
ACCELERATORS = {"cub": 1, "cutensor": 2, "cutensornet": 3}
CUDA_CALLS["array.base"] = MULTI   # a handle, None, or the base stored under the op's id
#: CuPy's graph API (``Stream.begin_capture``/``end_capture``, ``Graph.launch``/``upload``,
#: and which of the client's streams is current while a capture is in progress): the
#: worker's ``gpu_backend.worker.user_graphs``; begin and end wait for their errors
CUDA_CALLS.update(_names("graph.begin graph.end", VALUE))
CUDA_CALLS.update(_names("graph.route graph.launch graph.upload", NONE))

#: cupy.random's distributions (RandomState methods and module functions of the same name).
RANDOM_DISTRIBUTIONS = """
    beta binomial chisquare dirichlet exponential f gamma geometric gumbel hypergeometric
    laplace logistic lognormal logseries multivariate_normal negative_binomial
    noncentral_chisquare noncentral_f normal pareto poisson power rayleigh standard_cauchy
    standard_exponential standard_gamma standard_normal standard_t triangular uniform vonmises
    wald weibull zipf
"""
#: Remote objects: the classes a client may create in its session, each with the methods
#: it may call on one (and their return kinds). The object lives in the worker's handle
#: table under an id the client chose, and is dropped the way an array is; an op names a
#: class to create one (``random.RandomState``) or ``class.method`` to call one. The
#: module functions of ``cupy.random`` are methods of the session's global RandomState,
#: as in CuPy, so that seeding and ``set_random_state`` behave as CuPy's.
OBJECTS: dict[str, dict[str, str]] = {
    "random.RandomState": {
        **_names(RANDOM_DISTRIBUTIONS, ARRAY),
        **_names("rand randn randint random_sample choice permutation tomaxint", ARRAY),
        "_interval": ARRAY,   # integers in [0, mx]: CuPy's own tests call it
        **_names("seed shuffle", NONE),
    },
    "random.Generator": _names("""
        random uniform integers beta chisquare dirichlet exponential f geometric hypergeometric
        logseries standard_exponential poisson power standard_normal gamma standard_gamma binomial
    """, ARRAY),
    **{f"random.{name}": {"random_raw": ARRAY} for name in ("XORWOW", "MRG32k3a", "Philox4x3210")},
    # a cuFFT plan (made by cupyx.scipy.fftpack.get_fft_plan from an array, a shape, axes
    # and a value type): passed as ``plan=`` or made current by ``with plan:``
    "cufft.Plan": {"__enter__": NONE, "__exit__": NONE},
}
#: ``cupyx.scipy.signal``'s linear time-invariant systems: each public class builds one
#: (``lti(num, den)`` is a ``TransferFunctionContinuous``, as in CuPy) and any system
#: takes every method (CuPy's own raise where a kind of system has none); conversions and
#: a state-space system's arithmetic give new systems, the responses give arrays.
LTI_CLASSES = ("lti", "dlti", "TransferFunction", "ZerosPolesGain", "StateSpace")
_LTI_MEMBERS = {
    **_names("to_tf to_zpk to_ss to_discrete", OBJECT),
    **_names("impulse step output bode freqresp", MULTI),
    "__repr__": VALUE,
}
OBJECTS.update({f"signal.{name}": _LTI_MEMBERS for name in LTI_CLASSES})
# only CuPy's StateSpace has arithmetic (a transfer function times 2 is a TypeError there)
OBJECTS["signal.StateSpace"] = {
    **_LTI_MEMBERS,
    **_names("__mul__ __rmul__ __add__ __radd__ __sub__ __rsub__ __truediv__ __neg__", OBJECT)}
#: chirp z-transforms made once and applied to many arrays (``CZT(n)(x)``)
OBJECTS.update({f"signal.{name}": {"__call__": ARRAY, "points": ARRAY}
                for name in ("CZT", "ZoomFFT")})
_LTI_FIELDS = frozenset("num den zeros poles gain A B C D dt".split())
#: Attributes a client may set on a remote object (the value: an argument of the op).
OBJECT_SETTERS: dict[str, frozenset] = {
    "random.Generator": frozenset({"bit_generator"}),
    **{f"signal.{name}": _LTI_FIELDS for name in LTI_CLASSES},
}
#: Attributes a client may read (the op's result is structured, ``MULTI``: an array
#: comes back as a remote array, a number or None as itself).
OBJECT_GETTERS: dict[str, frozenset] = {
    f"signal.{name}": _LTI_FIELDS | {"inputs", "outputs"} for name in LTI_CLASSES}
#: ``cupyx.scipy.sparse``'s matrices, made and kept in the worker: conversions between the
#: formats, a transpose, a copy, a negation and scalar or sparse arithmetic give matrices;
#: a product with an array (or a sum with one) gives an array; their arrays are read as
#: attributes (views of the matrix's own, as in CuPy).
SPARSE_CLASSES = ("csr_matrix", "csc_matrix", "coo_matrix", "dia_matrix")
#: ``cupyx.scipy.sparse``'s functions that make a matrix: each is created as an object is
#: (its name in OBJECTS, no methods of its own; the matrix's class is the one it made)
SPARSE_FUNCTIONS = ("eye", "identity", "diags", "spdiags", "rand", "random", "hstack",
                    "vstack", "bmat", "kron", "kronsum", "tril", "triu", "block_diag")
#: CuPy's element-wise functions of a sparse matrix's stored values (each a new matrix)
SPARSE_UFUNCS = ("arcsin arcsinh arctan arctanh ceil deg2rad expm1 floor log1p rad2deg rint "
                 "sign sin sinh sqrt tan tanh trunc")
_SPARSE_MEMBERS = {
    **_names("tocsr tocsc tocoo asformat copy transpose astype conj conjugate power multiply "
             "__neg__ __abs__ __pow__ sorted_indices getrow getcol " + SPARSE_UFUNCS, OBJECT),
    **_names("toarray todense sum mean diagonal", ARRAY),
    # (argmax/argmin: an int for an empty matrix, else an array)
    **_names("count_nonzero trace argmax argmin", MULTI),
    # (in place: A[i, j] = x and setdiag as CuPy's, its SparseEfficiencyWarning included)
    **_names("sum_duplicates eliminate_zeros sort_indices setdiag __setitem__", NONE),
    **_names("dot __matmul__ __rmatmul__ __mul__ __rmul__ __add__ __radd__ __sub__ __rsub__ "
             "__truediv__ max min __getitem__ __eq__ __ne__ __lt__ __gt__ __le__ __ge__", EITHER),
}
OBJECTS.update({f"sparse.{name}": _SPARSE_MEMBERS for name in SPARSE_CLASSES})
OBJECTS.update({f"sparse.{name}": {} for name in SPARSE_FUNCTIONS})
OBJECT_GETTERS.update({f"sparse.{name}": frozenset(
    "shape nnz dtype data indices indptr row col offsets has_canonical_format".split())
    for name in SPARSE_CLASSES})
#: ``cupyx.jit``'s names a ``@jit.rawkernel()`` kernel's text may use (its module's, but
#: ``rawkernel`` and the ``cg``, ``cub`` and ``thrust`` modules): the client's markers and
#: the pool's translator (devices/jit_rawkernel.py) agree on them; the first five stand for
#: values in device code.
JIT_EXPRESSIONS = ("threadIdx", "blockDim", "blockIdx", "gridDim", "warpsize")
JIT_NAMES = JIT_EXPRESSIONS + (
    "range", "syncthreads", "syncwarp", "shared_memory", "grid", "gridsize", "laneid",
    "atomic_add", "atomic_sub", "atomic_exch", "atomic_min", "atomic_max", "atomic_inc",
    "atomic_dec", "atomic_cas", "atomic_and", "atomic_or", "atomic_xor",
    "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync")
#: ``cupyx.scipy.sparse.linalg``'s LU factorizations: ``splu`` and ``spilu`` make a
#: ``SuperLU`` of the worker (CuPy factorizes with SciPy on the host too); its ``solve``
#: runs in the pool, its permutations are read as arrays, its factors ``L`` and ``U`` as
#: new sparse matrices of the worker (OBJECT_MEMBERS).
SPARSE_LU_FUNCTIONS = ("splu", "spilu")
OBJECTS.update({f"sparse.linalg.{name}": {} for name in SPARSE_LU_FUNCTIONS})
OBJECTS["sparse.linalg.SuperLU"] = _names("solve", ARRAY)
OBJECT_GETTERS["sparse.linalg.SuperLU"] = frozenset("shape nnz perm_r perm_c".split())
#: Attributes whose value is itself an object of the worker, read as a new object (the
#: op asks for OBJECT): for each, the allow-listed class it must be an instance of.
OBJECT_MEMBERS: dict[str, dict[str, str]] = {
    "sparse.linalg.SuperLU": {"L": "sparse.csr_matrix", "U": "sparse.csr_matrix"},
}
