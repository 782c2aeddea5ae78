"""``import cupy`` → the proxy modules, while installed.

A meta-path finder placed first on ``sys.meta_path`` serves ``cupy``, its
proxied submodules, ``cupyx`` and ``cupy_backends.cuda.api`` (CUDA's runtime and
driver modules, which CuPy keeps there). A real CuPy already imported is set aside
and restored by :func:`uninstall`; other ``cupy.*`` modules are hidden while
installed so nothing mixes the two.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

from .modules import build_modules
from .state import activate, deactivate

__all__ = ["install", "uninstall", "installed"]

_saved: dict[str, Any] = {}


class _ProxyFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if _ours(fullname):
            if fullname in build_modules():
                return importlib.util.spec_from_loader(fullname, self)
            raise ModuleNotFoundError(
                f"No module named {fullname!r} (not available on gpu-workbench's remote GPU)",
                name=fullname,
            )
        return None

    def create_module(self, spec):
        return build_modules()[spec.name]

    def exec_module(self, module):
        pass


_finder = _ProxyFinder()


def _ours(name: str) -> bool:
    # (not a bare prefix: "cupyx_tests" or "cupy_foo" are other packages)
    return name in ("cupy", "cupyx", "cupy_backends") or name.startswith(
        ("cupy.", "cupyx.", "cupy_backends."))


def install(session: Any) -> None:
    """Make ``import cupy`` (and ``cupyx``) give proxies bound to *session*."""
    activate(session)
    if _finder not in sys.meta_path:
        for name in [n for n in sys.modules if _ours(n)]:
            _saved[name] = sys.modules.pop(name)
        sys.meta_path.insert(0, _finder)
    sys.modules.update(build_modules())


def uninstall() -> None:
    """Undo :func:`install`: real CuPy (if it was imported) comes back."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if _ours(n)]:
        del sys.modules[name]
    sys.modules.update(_saved)
    _saved.clear()
    deactivate()


def installed() -> bool:
    return _finder in sys.meta_path
