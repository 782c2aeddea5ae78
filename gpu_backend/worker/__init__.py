"""Session workers: one process per session, owning its arrays and device context."""

from .executor import Executor
from .handles import HandleTable

__all__ = ["Executor", "HandleTable"]
