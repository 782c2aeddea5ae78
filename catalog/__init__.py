"""The research catalogue: GPU disaggregation and sharing systems as structured data.

    import catalog
    catalog.load()                      # the Catalog model (every entry of the data file)
    catalog.queries.search("preemption")  # list, filter, search, show, compare, export
    %load_ext catalog                   # in IPython: the %catalog magic

Imports only pydantic and rich (and IPython for the magic); nothing of the
pool, the client or the kernel.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["load", "queries", "Catalog", "Category", "Kind", "Link", "LinkKind", "Mechanism", "System",
           "load_ipython_extension"]

#: The package's names, each loaded when first used (the models and their data are not
#: loaded by a module that only needs a small part of the package: catalog.magic_parser)
_WHERE = {"load": ".data", "queries": ".", **{name: ".models" for name in (
    "Catalog", "Category", "Kind", "Link", "LinkKind", "Mechanism", "System")}}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'catalog' has no attribute {name!r}")
    if where == ".":
        value = importlib.import_module(f".{name}", __name__)
    else:
        value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython) -> None:
    """``%load_ext catalog``: register the ``%catalog`` line magic."""
    from .magics import CatalogMagics
    ipython.register_magics(CatalogMagics)
