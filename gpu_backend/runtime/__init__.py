"""What every process of the pool uses: the bottom floor beside ``protocol``.

Holds ``run_dir`` (the pool's private directory), ``gc_pauses`` (the garbage collector
settled and its pauses recorded) and ``wake_queue`` (work of helper threads handed to a
loop that waits on a socket).

May import: the standard library only.
"""

__all__: list[str] = []
