"""A pytest plugin that puts one side under CuPy's own tests and records every outcome.

Loaded by ``run.py`` as ``-p benchmarks.cupy_suite.plugin`` (the repository on
``PYTHONPATH``) with the suite's ``tests/`` folder as the working directory. Set by
environment variables:

- ``GPUWB_SUITE_SIDE``: ``proxy`` (``import cupy`` is gpu-workbench's proxy, on the
  pool at ``GPUWB_SUITE_POOL``/``GPUWB_SUITE_TOKEN``, or on an embedded pool over
  ``GPUWB_SUITE_DEVICES``), ``local`` (the real CuPy installed here) or ``numpy``
  (NumPy posing as CuPy: the baseline where no GPU exists);
- ``GPUWB_SUITE_SOURCE``: the unpacked suite (``fetch.suite_dir``), whose real
  ``cupy/testing`` serves the proxy and numpy sides;
- ``GPUWB_SUITE_BLOCKING``: ``1`` (the default) runs the proxy's session with
  ``blocking`` on (``GPUWB_LAUNCH_BLOCKING``: an op's error is raised by the call that
  issued it, which the suite's ``pytest.raises`` blocks expect), ``0`` with the default
  asynchronous errors (raised at the next sync point);
- ``GPUWB_SUITE_ONLY``: a file of test ids (one per line): only these run (the
  baseline's subsample, so that both sides run the same tests);
- ``GPUWB_SUITE_RESULTS``: the JSON file written at the end (every test's outcome
  and, for failures, the cause: the exception's type and first line); each outcome
  is also appended to ``RESULTS.jsonl`` as it happens, so a run stopped by its time
  limit still tells what it ran.

The proxy side installs its import hook when pytest configures, before the suite's
test modules are imported. Of CuPy's internals only ``cupy._core.internal.prod``
(which ``cupy.testing`` itself imports), ``cupy._core._accelerator`` (on the NumPy
baseline; the proxy forwards the setting to the pool), ``cupy._core._cub_reduction``,
``_routines_linalg`` and ``cupy._indexing.generate`` (imported by modules whose other tests are ordinary),
``cupy._core.get/set_compute_type`` and, on the NumPy baseline, ``cupy.fft.config``
(settings, remembered only; the proxy has its own ``cupy.fft.config`` and ``cupy._core``,
which the stubs extend),
``cupy.fft._fft._default_fft_func``, ``cupyx.scipy.ndimage._util._is_integer_output``,
``cupy.linalg._util.stacked_identity`` and ``cupyx.scipy.signal._upfirdn._output_len`` (test
helpers, by CuPy's rules) are stubbed, and ``_iir_filter_conversions._cplxreal`` and
``_savitzky_golay._polyder`` (internals: they raise when called, so their own tests fail),
so that the suite collects; a test module that needs another internal fails to collect, and
is counted.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import math
import os
import sys
import types
import warnings

import pytest

_SIDE = os.environ.get("GPUWB_SUITE_SIDE", "local")
_outcomes: dict[str, list] = {}
_journal = None   # RESULTS.jsonl, appended as outcomes come


def _record(nodeid: str, entry: list, replace: bool = True) -> None:
    if not replace and nodeid in _outcomes:
        return
    _outcomes[nodeid] = entry
    if _journal is not None:
        _journal.write(json.dumps([nodeid, *entry]) + "\n")
        _journal.flush()
_pool = None
_session = None


class _SuiteSource(importlib.abc.MetaPathFinder):
    """Serves ``cupy.testing`` (the real one, from the suite's source) and the stub of
    ``cupy._core.internal``; everything else of ``cupy`` is left to the side's module."""

    def __init__(self, source: str) -> None:
        self.testing = os.path.join(source, "cupy", "testing")

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "cupy.testing":
            return importlib.util.spec_from_file_location(
                fullname, os.path.join(self.testing, "__init__.py"),
                submodule_search_locations=[self.testing])
        if fullname.startswith("cupy.testing."):
            leaf = fullname.rpartition(".")[2]
            return importlib.util.spec_from_file_location(
                fullname, os.path.join(self.testing, leaf + ".py"))
        if fullname in _STUBS:
            return importlib.util.spec_from_loader(fullname, _StubLoader())
        return None


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return _STUBS[spec.name]()

    def exec_module(self, module):
        pass


def _side_module(name: str) -> types.ModuleType | None:
    """The proxy's own module *name* (on the proxy side), which a stub then extends."""
    if _SIDE != "proxy":
        return None
    from kernelproxy.modules import build_modules
    return build_modules().get(name)


def _internal_stub() -> types.ModuleType:
    module = _side_module("cupy._core.internal") or types.ModuleType("cupy._core.internal")
    if not hasattr(module, "prod"):
        module.prod = lambda shape: math.prod(shape)
    return module


def _accelerator_stub() -> types.ModuleType:
    """``cupy._core._accelerator``: which CUB/cuTENSOR routines CuPy may use. Tests save,
    switch and restore the setting around a call; the pool keeps its own choice, so here
    the setting is only remembered (the results must be the same either way). The proxy
    has its own (the pool's setting, switched in the pool): that one is used there."""
    side = _side_module("cupy._core._accelerator")
    if side is not None:
        return side
    module = types.ModuleType("cupy._core._accelerator")
    module.ACCELERATOR_CUB, module.ACCELERATOR_CUTENSOR, module.ACCELERATOR_CUTLASS = 1, 2, 3
    chosen = {"routine": [], "reduction": []}
    module.get_routine_accelerators = lambda: list(chosen["routine"])
    module.get_reduction_accelerators = lambda: list(chosen["reduction"])
    module.set_routine_accelerators = lambda names: chosen.__setitem__("routine", list(names))
    module.set_reduction_accelerators = lambda names: chosen.__setitem__("reduction", list(names))
    return module


def _cub_reduction_stub() -> types.ModuleType:
    """``cupy._core._cub_reduction``: tests of CuPy's CUB path import it; they run only
    where ``cupy.cuda.cub.available`` (never through the proxy, whose CUB is the pool's)."""
    module = types.ModuleType("cupy._core._cub_reduction")
    module._CUB_REDUCE_SIZE_THRESHOLD = 1 << 10
    module._SimpleCubReductionKernel_get_cached_function = lambda *args, **kwargs: None
    return module


def _routines_linalg_stub() -> types.ModuleType:
    """``cupy._core._routines_linalg``: test_matmul.py parametrizes a few tests by its
    compute-type constants (CuPy's values); the module's other tests are ordinary."""
    module = types.ModuleType("cupy._core._routines_linalg")
    for value, name in enumerate("TBD DEFAULT PEDANTIC FP16 FP32 FP64 BF16 TF32".split()):
        setattr(module, f"COMPUTE_TYPE_{name}", value)
    return module


def _fft_internals_stub() -> types.ModuleType:
    """``cupy.fft._fft``: the fft tests ask ``_default_fft_func`` whether CuPy would take
    its N-d cuFFT plan (``_fftn``) for a shape and axes, to skip the cases where it would
    not; answered by CuPy's rule (no plan given, N-d planning on). ``_fft``/``_fftn`` are
    markers only: calling them is refused."""
    module = types.ModuleType("cupy.fft._fft")

    def _fft(*args, **kwargs):
        raise NotImplementedError("cupy.fft._fft is CuPy's internal; the pool runs the FFTs")

    def _fftn(*args, **kwargs):
        raise NotImplementedError("cupy.fft._fftn is CuPy's internal; the pool runs the FFTs")

    def _axes(ndim, s, axes):
        if axes is None:
            axes = tuple(range(ndim - len(s), ndim)) if s is not None else tuple(range(ndim))
        elif isinstance(axes, int):
            axes = (axes,)
        return sorted(a % ndim for a in axes)

    def _nd_planning():   # cupy.fft.config's switch, read as CuPy reads it (without its warning)
        config = sys.modules.get("cupy.fft.config")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return bool(getattr(config, "enable_nd_planning", True))

    def _default_fft_func(a, s=None, axes=None, plan=None, value_type="C2C"):
        if plan is not None or a.ndim == 1 or not _nd_planning():
            return _fft
        if a.flags.f_contiguous and value_type != "C2C":
            return _fft
        axes_sorted = _axes(a.ndim, s, axes)
        possible = (0 < len(axes_sorted) <= 3 and (0 in axes_sorted or a.ndim - 1 in axes_sorted)
                    and all(y - x == 1 for x, y in zip(axes_sorted, axes_sorted[1:])))
        return _fftn if len(axes_sorted) > 1 and possible else _fft

    def _size_last_transform_axis(shape, s, axes):
        if s is not None and s[-1] is not None:
            return s[-1]
        return shape[-1 if axes is None else axes[-1]]

    module.__dict__.update(_fft=_fft, _fftn=_fftn, _default_fft_func=_default_fft_func,
                           _size_last_transform_axis=_size_last_transform_axis)
    return module


def _fft_config_stub() -> types.ModuleType:
    """``cupy.fft.config``: the fft tests read and set CuPy's planning switches around their
    calls; the pool plans its FFTs itself, so here the switches are only remembered (the
    results must be the same either way). Plan-cache tests fail: no cache is the client's."""
    module = types.ModuleType("cupy.fft.config")
    module.enable_nd_planning = True
    module.use_multi_gpus = module._use_multi_gpus = False
    module._devices = None

    def set_cufft_gpus(gpus):
        raise NotImplementedError("multi-GPU cuFFT is the pool's choice")

    def _no_cache(*args, **kwargs):
        raise NotImplementedError("cuFFT plan caches live in the pool")

    module.__dict__.update(set_cufft_gpus=set_cufft_gpus, get_plan_cache=_no_cache,
                           clear_plan_cache=_no_cache, show_plan_cache_info=_no_cache,
                           set_cufft_callbacks=_no_cache)
    return module


def _core_stub() -> types.ModuleType:
    """``cupy._core``: a package of internals; test_matmul.py sets and restores the matmul
    compute type around its calls (the pool keeps its own; the setting is remembered)."""
    module = _side_module("cupy._core") or _package_stub("cupy._core")()
    chosen = [0]
    module.get_compute_type = lambda dtype=None: chosen[0]
    module.set_compute_type = lambda dtype=None, compute_type=0: chosen.__setitem__(0, compute_type)
    return module


def _ndimage_util_stub() -> types.ModuleType:
    """``cupyx.scipy.ndimage._util``: test_interpolation.py asks whether an output is of an
    integer type (CuPy's rule) to pick its tolerance."""
    import numpy

    module = types.ModuleType("cupyx.scipy.ndimage._util")

    def _is_integer_output(output, input):
        if output is None:
            return input.dtype.kind in "iu"
        if isinstance(output, (str, type, numpy.dtype)):
            return numpy.dtype(output).kind in "iu"
        return output.dtype.kind in "iu"

    module._is_integer_output = _is_integer_output
    return module


def _linalg_util_stub() -> types.ModuleType:
    """``cupy.linalg._util``: test_decomposition.py builds its expected identities with
    ``stacked_identity`` (on the side's own ``cupy``)."""
    module = types.ModuleType("cupy.linalg._util")

    def stacked_identity(batch_shape, n, dtype):
        import cupy
        x = cupy.zeros(tuple(batch_shape) + (n, n), dtype)
        idx = cupy.arange(n)
        x[..., idx, idx] = 1
        return x

    module.stacked_identity = stacked_identity
    return module


def _signal_internals_stub(name: str, helpers: dict, scipy_name: str = ""):
    """A private module of ``cupyx.scipy.signal`` that a test module imports a name from:
    the proxy's own where it forwards the module (its internal routines that CuPy's tests
    call), else an empty one; *helpers* are test helpers answered by CuPy's rule (pure
    arithmetic, on the client). On the NumPy baseline it is SciPy's module of the same
    name (or *scipy_name*)."""
    def make() -> types.ModuleType:
        if _SIDE == "numpy":
            return importlib.import_module(scipy_name or name.replace("cupyx.scipy.", "scipy."))
        module = _side_module(name) or types.ModuleType(name)
        module.__dict__.update(helpers)
        return module
    return make


def _output_len(len_h, in_len, up, down):
    """``_upfirdn._output_len``: the length of ``upfirdn``'s output (test_upfirdn.py
    computes its expected results with it)."""
    return (((in_len - 1) * up + len_h) - 1) // down + 1


def _package_stub(name: str):
    def make() -> types.ModuleType:
        module = types.ModuleType(name)
        module.__path__ = []
        return module
    return make


_STUBS = {"cupy._core": _core_stub, "cupy._core.internal": _internal_stub,
          "cupy._core._accelerator": _accelerator_stub,
          "cupy._core._cub_reduction": _cub_reduction_stub,
          "cupy._core._routines_linalg": _routines_linalg_stub,
          # test_generate.py imports it for two tests of an internal class; the rest collect
          "cupy._indexing": _package_stub("cupy._indexing"),
          "cupy._indexing.generate": _package_stub("cupy._indexing.generate"),
          "cupy.fft._fft": _fft_internals_stub, "cupy.fft.config": _fft_config_stub,
          "cupyx.scipy.ndimage._util": _ndimage_util_stub, "cupy.linalg._util": _linalg_util_stub,
          "cupyx.scipy.signal._upfirdn": _signal_internals_stub(
              "cupyx.scipy.signal._upfirdn", {"_output_len": _output_len}),
          "cupyx.scipy.signal._iir_filter_conversions": _signal_internals_stub(
              "cupyx.scipy.signal._iir_filter_conversions", {}, "scipy.signal._filter_design"),
          "cupyx.scipy.signal._savitzky_golay": _signal_internals_stub(
              "cupyx.scipy.signal._savitzky_golay", {})}


def _numpy_as_cupy() -> None:
    """``cupy`` = NumPy, with the few CuPy names ``cupy.testing`` asks for."""
    import numpy

    cupy = types.ModuleType("cupy")
    cupy.__dict__.update({k: v for k, v in vars(numpy).items() if not k.startswith("__")})
    cupy.__path__ = []
    cupy.__version__ = "numpy-" + numpy.__version__
    cupy.asnumpy = lambda a, stream=None, order="C", out=None, blocking=True: numpy.asarray(a, order=order)
    cupy.get_array_module = lambda *args: numpy
    cupy.exceptions = numpy.exceptions
    cupy._util = types.ModuleType("cupy._util")   # warning filters name its class
    cupy._util.PerformanceWarning = type("PerformanceWarning", (RuntimeWarning,), {})
    cupy.cuda = types.ModuleType("cupy.cuda")   # empty: tests of CUDA fail one by one
    cupyx = types.ModuleType("cupyx")
    cupyx.__path__ = []
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.__path__ = []
    cupyx.scipy.sparse = types.ModuleType("cupyx.scipy.sparse")   # cupy.testing asks it
    cupyx.scipy.sparse.issparse = lambda x: False                  # about every result
    sys.modules.update({"cupy": cupy, "cupy.exceptions": numpy.exceptions, "cupy.cuda": cupy.cuda,
                        "cupy._util": cupy._util,
                        "cupyx": cupyx, "cupyx.scipy": cupyx.scipy,
                        "cupyx.scipy.sparse": cupyx.scipy.sparse})
    for sub in ("special", "ndimage", "signal", "signal.windows", "fft", "linalg"):
        try:   # SciPy poses as cupyx.scipy, where installed
            module = importlib.import_module(f"scipy.{sub}")
        except ImportError:
            continue
        sys.modules[f"cupyx.scipy.{sub}"] = module
        if "." not in sub:
            setattr(cupyx.scipy, sub, module)


def _install_proxy() -> None:
    global _pool, _session
    import kernelproxy

    address = os.environ.get("GPUWB_SUITE_POOL")
    token = os.environ.get("GPUWB_SUITE_TOKEN", "")
    if not address:
        from gpu_backend.pool import LocalPool
        # local CuPy has no per-process memory limit, and some tests allocate ~8.5 GB in one
        # process (test_fft_allocate): the suite's session may use 32 GiB, not the pool's
        # default 4 GiB (a limit that is the operator's policy, not CuPy's behaviour)
        _pool = LocalPool(devices=os.environ.get("GPUWB_SUITE_DEVICES", "auto"),
                          memory_limit=32 << 30).start()
        address, token = _pool.address, _pool.token
    _session = kernelproxy.connect(address, token)
    # errors at the call that made them (GPUWB_LAUNCH_BLOCKING), as the suite's pytest.raises
    # blocks expect; GPUWB_SUITE_BLOCKING=0 measures the default, errors at the next sync
    _session.blocking = os.environ.get("GPUWB_SUITE_BLOCKING", "1") != "0"
    kernelproxy.install(_session)
    _core_stub(), _internal_stub()   # the proxy's cupy._core is imported already: extend it now


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    global _journal
    target = os.environ.get("GPUWB_SUITE_RESULTS")
    if target:
        _journal = open(target + "l", "w")
    source = os.environ.get("GPUWB_SUITE_SOURCE")
    if _SIDE == "local":
        return
    if not source:
        raise pytest.UsageError("GPUWB_SUITE_SOURCE must name the unpacked suite (fetch.py)")
    if _SIDE == "proxy":
        _install_proxy()
    elif _SIDE == "numpy":
        _numpy_as_cupy()
    else:
        raise pytest.UsageError(f"GPUWB_SUITE_SIDE must be proxy, local or numpy, not {_SIDE!r}")
    sys.meta_path.insert(0, _SuiteSource(source))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    only = os.environ.get("GPUWB_SUITE_ONLY")
    if only:
        with open(only) as fh:
            wanted = {line.strip() for line in fh if line.strip()}
        kept = [item for item in items if item.nodeid in wanted]
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in wanted])
        items[:] = kept


#: cupy.testing's messages that carry the side's own error below a blank line
_WRAPPED = ("Only cupy raises error", "Only numpy raises error", "Different types of errors occurred",
            "Both cupy and numpy raise exceptions")


def _cause(excinfo) -> str:
    """The exception's type and first line; for cupy.testing's comparisons of errors,
    also the last line of the error it wraps (the proxy's own error, usually); for its
    dtype comparison, the two dtypes."""
    text = str(excinfo.value).strip().splitlines()
    first = text[0] if text else ""
    if first.startswith("ndarrays of different dtypes"):   # which dtypes: "cupy: X numpy: Y"
        first += " " + " ".join(line.strip() for line in text[1:3])
    if first in _WRAPPED:
        inner = [line.strip() for line in text[1:] if line.strip() and not line.startswith(" ")]
        if inner:
            first += " | " + inner[-1 if first.startswith("Only") else 1]
    return f"{excinfo.typename}: {first[:200]}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    nodeid = report.nodeid
    if report.when == "call" or report.outcome != "passed":
        if report.skipped:
            kind = "xfailed" if hasattr(report, "wasxfail") else "skipped"
            _record(nodeid, [kind, None], replace=False)
        elif report.failed:
            kind = "failed" if report.when == "call" else "error"
            cause = _cause(call.excinfo) if call.excinfo is not None else "failed"
            _record(nodeid, [kind, cause])
        elif report.when == "call":
            kind = "xpassed" if hasattr(report, "wasxfail") else "passed"
            _record(nodeid, [kind, None], replace=False)


def pytest_collectreport(report):
    if report.failed:   # a module that does not import: every test in it is lost
        text = str(report.longrepr).strip().splitlines()
        last = [line for line in text if line.startswith("E ")]
        _record(report.nodeid, ["collect-error", (last[-1][2:].strip() if last else text[-1])[:240]])


def pytest_sessionfinish(session, exitstatus):
    target = os.environ.get("GPUWB_SUITE_RESULTS")
    if target:
        cupy = sys.modules.get("cupy")
        with open(target, "w") as out:
            json.dump({"side": _SIDE, "cupy": getattr(cupy, "__version__", None),
                       "outcomes": _outcomes}, out)
    if _journal is not None:
        _journal.close()
    if _session is not None:
        _session.close()
    if _pool is not None:
        _pool.stop()
