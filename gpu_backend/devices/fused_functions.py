"""A client's ``cupy.fuse`` function, run in the pool from the program its client traced.

The program (gpu_backend/protocol/fused_programs.py) is a list of calls on the function's
parameters. :func:`replaying` makes the Python function that makes those calls again, on
whatever it is given: on a GPU, CuPy's ``fuse`` gives it CuPy's stand-ins and compiles what
they see into one kernel, the kernel CuPy builds for the user's own function locally; on
the NumPy device it runs on the arrays themselves. Every name is a key into the device's
tables (the same allow-listed callables an ordinary op gets); nothing the client sent is
run as Python.
"""

from __future__ import annotations

from typing import Any, Callable

from ..protocol import messages as m
from ..protocol.fused_programs import Program, check_program

__all__ = ["replaying", "fused_kernel"]


def _value(operand: tuple, values: list) -> Any:
    is_slot, content = operand
    return values[content] if is_slot else content


def replaying(program: Program, functions: dict, operators: dict,
              method: Callable[[Any, str, tuple, dict], Any]) -> Callable[..., Any]:
    """The function that makes *program*'s calls on its arguments: functions and operators
    from the device's tables, a method through *method* (target, name, args, kwargs)."""
    ops = program.ops
    out, multi = program.out, program.multi
    steps = []
    for kind, name, target, args, kwargs in ops:
        if kind == m.KIND_FUNCTION:
            fn = functions.get(name)
        elif kind == m.KIND_OPERATOR:
            fn = operators.get(name)
        else:
            fn = None
        if fn is None and kind != m.KIND_METHOD:
            raise NotImplementedError(f"{name!r} is not available on this pool's device")
        steps.append((fn, name, target, args, tuple(kwargs.items())))

    def fused(*params: Any) -> Any:
        values = list(params)
        for fn, name, target, args, kwargs in steps:
            positional = [_value(a, values) for a in args]
            keywords = {k: _value(v, values) for k, v in kwargs}
            if fn is None:
                values.append(method(values[target[1]], name, positional, keywords))
            else:
                values.append(fn(*positional, **keywords))
        if multi:
            return tuple(values[s] for s in out)
        return values[out[0]] if out else None

    fused.__name__ = fused.__qualname__ = program.name
    return fused


def fused_kernel(cupy: Any, definition: Any, functions: dict, operators: dict) -> Callable[..., Any]:
    """The CuPy ``fuse`` of the program *definition*: CuPy traces the replaying function
    once per argument signature and launches its kernel, as for the user's function."""
    program = check_program(definition)

    def method(target: Any, name: str, args: list, kwargs: dict) -> Any:
        return getattr(target, name)(*args, **kwargs)   # (a stand-in's: fusable names only)

    return cupy.fuse(kernel_name=program.name)(replaying(program, functions, operators, method))
