"""The hosts: the worker processes of one machine and what they share there.

Holds ``collection`` (``Hosts``: the hosts a front door places on), ``worker_host``
(``WorkerHost``: one host's workers, spin slots, arbiter and zygotes), ``pool_workers`` (a
worker process as the door keeps it), ``zygotes`` (workers forked from a warm process),
``device_samples`` (each device's busy time and memory over the last minutes) and ``nvml``
(a GPU's NVML figures, optional).

May import: ``runtime``, ``protocol``, ``config``, ``arbiter`` and ``worker`` (it starts
them); nothing of the front door, the accounts or the pool across hosts.
"""

__all__: list[str] = []
