"""Each package's public names (``__all__``), as jupyter_client's test_public_api does:
the names a user or another package may rely on are there, every name ``__all__`` lists
resolves, and every module says what it exports."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

#: the API each package promises (a name dropped or renamed here breaks users' code)
PROMISED = {
    "gpu_backend": {"__version__", "LocalPool", "PoolSettings"},
    "kernelproxy": {"connect", "install", "uninstall", "installed", "Session", "ndarray",
                    "PoolError", "ProtocolError", "AuthenticationError", "SignInThrottledError",
                    "VersionMismatchError", "NotAllowedError", "InvalidHandleError",
                    "SessionLostError", "QuotaExceededError", "RemoteError", "OutOfMemoryError"},
    "catalog": {"load", "queries", "Catalog", "Category", "Kind", "Link", "LinkKind", "Mechanism",
                "System", "load_ipython_extension"},
    "workbench": {"__version__", "load_ipython_extension"},
}

#: modules that need what only a GPU host has
NEEDS_GPU = {"gpu_backend.devices.cupy_device"}


def _modules(package: str) -> list[str]:
    root = importlib.import_module(package)
    return [package] + sorted(info.name for info in pkgutil.walk_packages(root.__path__, package + ".")
                              if info.name not in NEEDS_GPU)


@pytest.mark.parametrize("package", sorted(PROMISED))
def test_the_package_keeps_its_promised_names(package):
    module = importlib.import_module(package)
    assert set(module.__all__) == PROMISED[package]
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))


def test_a_client_importing_the_protocol_does_not_load_the_pool():
    """gpu_backend's names load when first used: kernelproxy imports only the protocol."""
    import subprocess
    import sys

    code = ("import sys, kernelproxy, gpu_backend; "
            "loaded = [m for m in ('gpu_backend.pool', 'gpu_backend.door.frontdoor', 'gpu_backend.config', "
            "'pydantic_settings') if m in sys.modules]; "
            "assert not loaded, loaded; "
            "assert gpu_backend.LocalPool.__name__ == 'LocalPool'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("package", sorted(PROMISED))
def test_every_module_lists_its_exports_and_they_resolve(package):
    missing_all, unresolved, doubled = [], {}, {}
    for name in _modules(package):
        if name.endswith(".__main__"):
            continue
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        if exported is None:
            missing_all.append(name)
            continue
        gone = [n for n in exported if not hasattr(module, n)]
        if gone:
            unresolved[name] = gone
        if len(set(exported)) != len(exported):
            doubled[name] = sorted({n for n in exported if list(exported).count(n) > 1})
    assert not missing_all, f"modules without __all__: {missing_all}"
    assert not unresolved, f"__all__ names that do not exist: {unresolved}"
    assert not doubled, f"__all__ names listed twice: {doubled}"
