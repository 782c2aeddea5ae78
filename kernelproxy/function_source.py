"""A vectorized function as the pool receives it: its source text and what its free names
stand for, found here the way CuPy's JIT finds them (``inspect``, ``linecache``), so that
the pool can translate it without the function object (see functional.vectorize)."""

from __future__ import annotations

import ast
import inspect
import linecache
import math
import types
from typing import Any

import numpy as np

__all__ = ["function_source", "free_names", "returns_tuple"]


def function_source(func: Any) -> tuple[str, str]:
    """``("def", text)`` of a function, dedented, or ``("lambda", text)`` of the one lambda
    expression on the lines that define *func*; the errors CuPy's JIT gives otherwise."""
    if not callable(func):
        raise ValueError("`func` must be a callable object.")
    try:
        filename = inspect.getsourcefile(func)
    except TypeError:   # a builtin, or a function made without source
        filename = None
    if filename == "<stdin>":
        raise RuntimeError(f"JIT needs access to the Python source code for {func} but it cannot "
                           "be retrieved within the Python interactive interpreter. Consider "
                           "using IPython instead.")
    if getattr(func, "__name__", None) != "<lambda>":
        try:
            lines, _ = inspect.getsourcelines(func)
        except (OSError, TypeError) as exc:
            raise ValueError(f"JIT needs access to Python source code for {func} but could "
                             f"not be located ({exc})") from None
        prefix = lines[0][:len(lines[0]) - len(lines[0].lstrip())]   # the def's indentation
        return "def", "".join(line[len(prefix):] if line.startswith(prefix) else line
                              for line in lines)
    if filename is None:
        raise ValueError(f"JIT needs access to Python source code for {func} but could not be "
                         "located.\n(hint: it is likely you passed a built-in function or method)")
    full = "".join(linecache.getlines(filename))
    lines, start = inspect.getsourcelines(func)
    end = start + len(lines)
    lambdas = [node for node in ast.walk(ast.parse(full))
               if isinstance(node, ast.Lambda) and start <= node.lineno < end]
    if len(lambdas) != 1:
        raise ValueError(f"Multiple callables are found near the definition of {func}, and JIT "
                         "could not identify the source code for it." if lambdas else
                         f"JIT could not find the source code of {func}")
    return "lambda", ast.get_source_segment(full, lambdas[0])


def free_names(func: Any, cupy: Any) -> dict[str, Any]:
    """What the function's global and closure names stand for, where the pool can have
    it: numbers, NumPy scalar types (by name), and the modules math, numpy and cupy (by
    name); for a ``cupyx.jit`` kernel also cupyx.jit, its names and device functions
    (kernelproxy/jit.py). Other names are left out: the pool's translator then reports
    them."""
    try:
        closure = inspect.getclosurevars(func)
    except (TypeError, ValueError):
        return {}
    names: dict[str, Any] = {}
    for name, value in {**closure.globals, **closure.nonlocals}.items():
        wire = getattr(type(value), "__gpuwb_free_name__", None)
        if wire is not None:   # cupyx.jit, its names, device functions (kernels only)
            names[name] = wire(value)
        elif isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
            names[name] = value
        elif value is math:
            names[name] = {"module": "math"}
        elif value is np:
            names[name] = {"module": "numpy"}
        elif value is cupy or (isinstance(value, types.ModuleType) and value.__name__ == "cupy"):
            names[name] = {"module": "cupy"}
        elif isinstance(value, np.dtype) and value.kind in "biufc":
            names[name] = {"type": value.name}
        elif isinstance(value, type) and issubclass(value, np.generic) and value is not np.generic:
            try:
                names[name] = {"type": np.dtype(value).name}
            except TypeError:   # an abstract type (np.floating): not a dtype
                pass
    return names


def returns_tuple(form: str, source: str) -> bool:
    """Whether the function returns a tuple (CuPy then makes one output per item): a
    ``return (a, b)``, or a return of a name that is assigned a tuple."""
    tree = ast.parse(source, mode="eval" if form == "lambda" else "exec")
    if form == "lambda":
        return isinstance(tree.body.body, ast.Tuple)
    tuples = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
              and isinstance(node.value, ast.Tuple)
              for target in node.targets if isinstance(target, ast.Name)}
    return any(isinstance(node.value, ast.Tuple)
               or (isinstance(node.value, ast.Name) and node.value.id in tuples)
               for node in ast.walk(tree) if isinstance(node, ast.Return) and node.value is not None)
