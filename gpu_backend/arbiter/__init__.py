"""The fair-share arbiter: which session of a device may put work on the GPU.

Holds ``policy`` (what every policy shares), ``turns`` (fair and fifo as plain logic, with
``gap_rule``), ``share`` (sessions side by side, with ``anticipation``), ``choose`` (the
policy a pool names), ``service`` (the arbiter thread), ``baton`` and ``trace``.

May import: ``protocol`` and ``runtime``; nothing of the workers, the hosts or the door.
"""

__all__: list[str] = []
