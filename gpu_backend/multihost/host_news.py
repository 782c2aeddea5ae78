"""News of hosts that helper threads hand to the front door's loop (docs/cluster.md).

Ray's watcher (:mod:`gpu_backend.multihost.cluster`) runs on a thread of its own; what it learns
reaches the front door's loop as these items through a ``WakeQueue``, and the loop alone
applies them to its tables (:mod:`gpu_backend.multihost.across_hosts`), so no table is written by
two threads. A module of its own so that both sides import it and neither the other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HostDeployed", "HostGone"]


@dataclass(frozen=True)
class HostDeployed:
    """News: an agent was deployed for host *name* with *secret* (its join will prove it)."""
    name: str
    secret: str


@dataclass(frozen=True)
class HostGone:
    """News: host *name* is lost, *why* (its node left the Ray cluster, its agent died)."""
    name: str
    why: str
