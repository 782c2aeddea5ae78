"""The accounts: who may use the pool and what they used.

Holds ``users`` (the users file, token hashes, the registry), ``accounts`` (quotas and
memory grants) and ``usage`` (the usage log, live shares).

May import: ``protocol`` and the worker's grant arithmetic (``worker.grants``); nothing of
the front door or the hosts.
"""

__all__: list[str] = []
