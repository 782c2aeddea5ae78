"""Session workers: one process per session, owning its arrays and device context.

May import: ``devices``, ``protocol``, ``runtime``, ``arbiter`` (the lease's messages) and
``security``; nothing of the front door, the hosts or the accounts.
"""

from .executor import Executor
from .handles import HandleTable

__all__ = ["Executor", "HandleTable"]
