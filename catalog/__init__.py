"""The research catalogue: GPU disaggregation and sharing systems as structured data.

    import catalog
    catalog.load()                      # the Catalog model (every entry of the data file)
    catalog.queries.search("preemption")  # list, filter, search, show, compare, export
    %load_ext catalog                   # in IPython: the %catalog magic

Imports only pydantic and rich (and IPython for the magic); nothing of the
pool, the client or the kernel.
"""

from __future__ import annotations

from . import queries
from .data import load
from .models import Catalog, Category, Kind, Link, LinkKind, Mechanism, System

__all__ = ["load", "queries", "Catalog", "Category", "Kind", "Link", "LinkKind", "Mechanism", "System",
           "load_ipython_extension"]


def load_ipython_extension(ipython) -> None:
    """``%load_ext catalog``: register the ``%catalog`` line magic."""
    from .magics import CatalogMagics
    ipython.register_magics(CatalogMagics)
