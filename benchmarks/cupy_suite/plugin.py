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
- ``GPUWB_SUITE_ONLY``: a file of test ids (one per line): only these run (the
  baseline's subsample, so that both sides run the same tests);
- ``GPUWB_SUITE_RESULTS``: the JSON file written at the end (every test's outcome
  and, for failures, the cause: the exception's type and first line); each outcome
  is also appended to ``RESULTS.jsonl`` as it happens, so a run stopped by its time
  limit still tells what it ran.

The proxy side installs its import hook when pytest configures, before the suite's
test modules are imported. Of CuPy's internals only ``cupy._core.internal.prod``
(which ``cupy.testing`` itself imports) is stubbed, so that the suite collects; a
test module that needs another internal fails to collect, and is counted.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import math
import os
import sys
import types

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


def _core_stub() -> types.ModuleType:
    module = types.ModuleType("cupy._core")
    module.__path__ = []
    return module


def _internal_stub() -> types.ModuleType:
    module = types.ModuleType("cupy._core.internal")
    module.prod = lambda shape: math.prod(shape)
    return module


_STUBS = {"cupy._core": _core_stub, "cupy._core.internal": _internal_stub}


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
    cupy.cuda = types.ModuleType("cupy.cuda")   # empty: tests of CUDA fail one by one
    cupyx = types.ModuleType("cupyx")
    cupyx.__path__ = []
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.__path__ = []
    cupyx.scipy.sparse = types.ModuleType("cupyx.scipy.sparse")   # cupy.testing asks it
    cupyx.scipy.sparse.issparse = lambda x: False                  # about every result
    sys.modules.update({"cupy": cupy, "cupy.exceptions": numpy.exceptions, "cupy.cuda": cupy.cuda,
                        "cupyx": cupyx, "cupyx.scipy": cupyx.scipy,
                        "cupyx.scipy.sparse": cupyx.scipy.sparse})


def _install_proxy() -> None:
    global _pool, _session
    import kernelproxy

    address = os.environ.get("GPUWB_SUITE_POOL")
    token = os.environ.get("GPUWB_SUITE_TOKEN", "")
    if not address:
        from gpu_backend.pool import LocalPool
        _pool = LocalPool(devices=os.environ.get("GPUWB_SUITE_DEVICES", "auto")).start()
        address, token = _pool.address, _pool.token
    _session = kernelproxy.connect(address, token)
    kernelproxy.install(_session)


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


def _cause(excinfo) -> str:
    text = str(excinfo.value).strip().splitlines()
    first = text[0] if text else ""
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
