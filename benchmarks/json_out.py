"""The benchmarks' common ending: the result printed as JSON after the table, and written
to ``--json`` when given (docs/performance.md and docs/performance-log.md quote these
files)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["emit"]


def emit(result: Any, path: str | None) -> None:
    print(json.dumps(result, indent=1))
    if path:
        with open(path, "w") as out:
            json.dump(result, out, indent=1)
