"""Loading the catalogue's data file, shipped inside the package."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from .models import Catalog

__all__ = ["load", "DATA_FILE"]

DATA_FILE = "systems.json"


@lru_cache(maxsize=1)
def load() -> Catalog:
    """Parse and validate ``catalog/data/systems.json`` (once per process)."""
    text = resources.files("catalog").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    return Catalog.model_validate_json(text)
