"""The front door: the pool's one loop and what it keeps.

Holds ``frontdoor`` (the loop: hellos, sessions, the workers' control messages),
``session_records`` (sessions open, waiting, ended), ``auth_gate`` (token checks off the
loop, back-off, the tarpit, the refusals' summary: all bounded per client), ``placement``
(the device for a new session), ``spares`` (warm spare workers), ``reclaims`` (requests
waiting for memory a user's other sessions hand back), ``session_end``, ``pool_status``,
``metrics`` (Prometheus) and ``same_host`` (the ``ipc://`` door's directory).

May import: every other subpackage of ``gpu_backend`` (it is the top floor beneath the
entry points) and ``config``/``security``; nothing imports it but the entry points
(``pool``, ``cli``) and ``multihost`` never does.
"""

__all__: list[str] = []
