"""``cupy.vectorize`` of a client's function, translated in the pool by CuPy's JIT.

CuPy's ``vectorize`` never runs its function in Python: ``cupyx.jit`` reads the
function's source, translates it to a CUDA device function and launches it as an
elementwise kernel. The pool does the same from the source *text* the client sends. The
text is never executed, imported or compiled as Python: it is parsed (``ast.parse``),
checked node by node against a closed set (:func:`check_function`), and the checked tree
is handed to CuPy's translator, which writes CUDA C++ for NVRTC (device code, as for any
``ElementwiseKernel`` a client sends).

What the function's names can reach is closed too: its parameters and locals, the
numbers and numeric NumPy scalar types the client sent for its global and closure
names, stand-ins of the modules ``math``, ``numpy`` and ``cupy`` holding copies of
public attributes of a few kinds only
(numeric scalar types, number constants, ``cupy``'s ufuncs, ``math``'s functions but
the unbounded ones), and the builtins
``range``, ``len``, ``min``, ``max``, ``abs``, ``bool``, ``int``, ``float``, ``complex``.
The translator folds expressions of constants by calling these (``math.sqrt(2.0)``):
the only Python it runs for the client, on numbers, in the client's own session
process. Powers and shifts are folded only between two literals of bounded size,
``math``'s functions whose cost grows with their argument are not offered, indexing is
not translated, tuples are only returned or unpacked (never repeated or added), and the
free names are never rebound nor aliased (``cupy = numpy``, ``d = numpy.dtype``), so that
folding cannot be made to run for ever or fill the memory, nor reach another object.
What remains is multiplying numbers written in the source (bounded by its 64 KiB).
"""

from __future__ import annotations

import ast
import math
import numbers
import types
from typing import Any, Callable

import numpy as np

from ..protocol.codec import EXTENSION_NUMBERS, CodecError, check_dtype

__all__ = ["VectorizeError", "parse_function", "check_function", "resolve_names", "Vectorized"]

#: Source text longer than this is refused (a function, not a program).
MAX_SOURCE = 64 * 1024
#: Nodes in one function's tree.
MAX_NODES = 20_000
#: The largest literal exponent or shift count folded between two literals.
MAX_FOLDED_EXPONENT = 1024
#: The builtins a function may call (CuPy's JIT knows the first four; the others are
#: casts or fold on constants).
BUILTINS = {f.__name__: f for f in (range, len, min, max, abs, bool, int, float, complex)}
#: Modules the client may name, by the marker it sends.
MODULES = ("math", "numpy", "cupy")

_STATEMENTS = (ast.Return, ast.Assign, ast.AugAssign, ast.If, ast.While, ast.For, ast.Break,
               ast.Continue, ast.Pass, ast.Expr)
_EXPRESSIONS = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.Name,
                ast.Attribute, ast.Constant, ast.Tuple, ast.Subscript)
_OTHER = (ast.arguments, ast.arg, ast.keyword, ast.Load, ast.Store, ast.operator, ast.unaryop,
          ast.boolop, ast.cmpop)


class VectorizeError(TypeError):
    """The function uses something the pool does not translate for clients."""


def parse_function(source: Any, form: Any) -> ast.FunctionDef:
    """The function's tree from its text: a ``def`` (decorators dropped: they are not
    run) or a ``lambda`` expression (as a ``def`` named ``_lambda_kernel``, as CuPy)."""
    if not isinstance(source, str) or len(source) > MAX_SOURCE:
        raise VectorizeError(f"a vectorized function's source must be text of at most "
                             f"{MAX_SOURCE} characters")
    try:
        if form == "lambda":
            node = ast.parse(source, mode="eval").body
            if not isinstance(node, ast.Lambda):
                raise VectorizeError("expected a lambda expression")
            tree = ast.FunctionDef(name="_lambda_kernel", args=node.args,
                                   body=[ast.Return(node.body)], decorator_list=[], returns=None,
                                   type_params=[])
        elif form == "def":
            module = ast.parse(source)
            if len(module.body) != 1 or not isinstance(module.body[0], ast.FunctionDef):
                raise VectorizeError("expected the source of one function (def)")
            tree = module.body[0]
            tree.decorator_list = []
            tree.returns = None
        else:
            raise VectorizeError(f"unknown function form {form!r}")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise VectorizeError(f"the function's source does not parse: {exc}") from None
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        tree.body = body[1:] or [ast.Pass()]   # the docstring
    return ast.fix_missing_locations(tree)


def resolve_names(consts: Any, cupy: Any,
                  kernel_name: Callable[[str, dict], Any] | None = None) -> dict[str, Any]:
    """The values of the function's free names: the client's numbers and scalar types,
    the named modules, the allowed builtins. *kernel_name* resolves the entries only a
    ``cupyx.jit`` kernel has (``cupyx.jit`` itself, its names, device functions; see
    jit_rawkernel.py), or is None for a vectorized function."""
    if not isinstance(consts, dict):
        raise VectorizeError("the function's names must be a map")
    modules = {"math": _namespace(math, cupy), "numpy": _namespace(np, cupy),
               "cupy": _namespace(cupy, cupy) if cupy is not None else _Namespace("cupy")}
    names: dict[str, Any] = dict(BUILTINS)
    for name, value in consts.items():
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("__"):
            raise VectorizeError(f"bad name {name!r}")
        if isinstance(value, dict) and set(value) == {"module"} and value["module"] in MODULES:
            names[name] = modules[value["module"]]
        elif isinstance(value, dict) and set(value) == {"type"} and isinstance(value["type"], str):
            names[name] = _numeric_type(value["type"])
        elif isinstance(value, (bool, int, float, complex, np.bool_, np.number)):
            names[name] = value
        elif kernel_name is not None and isinstance(value, dict) and len(value) == 1:
            names[name] = kernel_name(name, value)
        else:
            what = ("a kernel's" if kernel_name is not None else "a vectorized function's")
            raise VectorizeError(f"{name} is a {type(value).__name__}: {what} global names may "
                                 "be numbers, NumPy scalar types, math, numpy or cupy"
                                 + (", cupyx.jit and its names, or device functions"
                                    if kernel_name is not None else ""))
    return names


#: Attributes of values (parameters, locals, expressions) that the translator offers.
_VALUE_ATTRIBUTES = frozenset({"real", "imag"})
#: ... and in a kernel: a dim3's members, an array's size, shape, strides and ndim (each an
#: expression the translator writes; any other attribute of its types is refused here, so
#: that no name reaches the translator's own methods).
_KERNEL_VALUE_ATTRIBUTES = _VALUE_ATTRIBUTES | {"x", "y", "z", "size", "shape", "strides", "ndim"}
#: Keywords a kernel's calls may give (shared_memory's alignment, a shuffle's width).
_KERNEL_KEYWORDS = frozenset({"dtype", "alignment", "width"})
#: math functions never folded for a client: their cost grows without bound with the
#: argument (factorial(10**8)) or they take iterables.
_MATH_REFUSED = frozenset("factorial comb perm prod fsum sumprod".split())


class _Namespace(types.SimpleNamespace):
    """What the function sees of ``math``, ``numpy`` or ``cupy``: only the allowed
    attributes, copied, so that no name the client writes can reach the rest of the module
    (the translator reads attributes of constants with ``getattr``)."""

    def __init__(self, module_name: str, _expressions: frozenset = frozenset(),
                 **attributes: Any) -> None:
        super().__init__(**attributes)
        self._module_name = module_name   # (underscored: no function may name it)
        #: attributes that stand for values in device code (cupyx.jit's threadIdx): a local
        #: may be given one
        self._expressions = _expressions


def _scalar_type(value: Any) -> bool:
    """A numeric NumPy scalar type (never ``object_``, ``str_``, ``void``, dates)."""
    if not isinstance(value, type) or not issubclass(value, np.generic):
        return False
    if issubclass(value, (np.number, np.bool_)):
        return value not in (np.number, np.integer, np.signedinteger, np.unsignedinteger,
                             np.inexact, np.floating, np.complexfloating)
    try:
        return np.dtype(value).name in EXTENSION_NUMBERS
    except TypeError:
        return False


#: Each module's stand-in, made once per process (``dir`` of cupy is long).
_NAMESPACES: dict[int, _Namespace] = {}


def _namespace(module: Any, cupy: Any) -> _Namespace:
    found = _NAMESPACES.get(id(module))
    if found is None:
        found = _NAMESPACES[id(module)] = _make_namespace(module, cupy)
    return found


def _make_namespace(module: Any, cupy: Any) -> _Namespace:
    """Numbers and numeric scalar types of *module*; math's bounded functions; cupy's
    ufuncs (translated to device code; numpy's would only fold constants: not offered);
    ``dtype`` of numpy and cupy (its calls are checked)."""
    allowed = {}
    for attr in dir(module):
        if attr.startswith("_"):
            continue
        value = getattr(module, attr, None)
        if isinstance(value, float) or _scalar_type(value) \
                or (module is math and type(value) is type(math.sqrt) and attr not in _MATH_REFUSED) \
                or (cupy is not None and module is cupy and isinstance(value, cupy.ufunc)):
            allowed[attr] = value
    if module is not math:
        allowed["dtype"] = np.dtype
    return _Namespace(getattr(module, "__name__", "module"), **allowed)


def _is_dtype_call(node: ast.AST, names: dict[str, Any]) -> bool:
    """``numpy.dtype(...)`` or ``cupy.dtype(...)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "dtype" and isinstance(node.func.value, ast.Name)):
        return False
    module = names.get(node.func.value.id)
    return isinstance(module, _Namespace) and module._module_name in ("numpy", "cupy")


def _maybe_constant(node: ast.AST, names: Any) -> bool:
    """Whether the translator may fold *node* (every name in it is one of *names*)."""
    return all(n.id in names for n in ast.walk(node) if isinstance(n, ast.Name))


def _constant_locals(tree: ast.FunctionDef, names: dict[str, Any]) -> set[str]:
    """Locals the translator holds as constants: assigned, in the function's own body (not
    in a loop or branch), an expression of free names and such locals only. (Unseen, ``k =
    10 ** 9`` then ``3 ** k`` was folded in the pool: a power of two constants.)"""
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                    and isinstance(stmt.targets[0], ast.Name) \
                    and stmt.targets[0].id not in found \
                    and _maybe_constant(stmt.value, set(names) | found):
                found.add(stmt.targets[0].id)
                grew = True
    return found


def _literal_number(node: ast.AST) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, numbers.Number):
        return abs(node.value)
    return None


def _returned_or_unpacked(node: ast.AST, parents: dict, kernel: bool = False) -> bool:
    """*node* is a returned or assigned value, or an item of a tuple that is one; in a
    kernel also an index (``a[i, j]``) or an argument of a call (``atomic_add(a, (i, j), v)``)."""
    parent = parents.get(node)
    if isinstance(parent, (ast.Return, ast.Assign)) and parent.value is node:
        return True
    if kernel and (isinstance(parent, ast.Subscript) and parent.slice is node
                   or isinstance(parent, ast.Call) and node in parent.args):
        return True
    return isinstance(parent, ast.Tuple) and isinstance(parent.ctx, ast.Load) \
        and _returned_or_unpacked(parent, parents, kernel)


def _check_bindings(tree: ast.FunctionDef, names: dict[str, Any], kernel: bool = False) -> None:
    """Names keep what they stand for: the free names are never rebound (``cupy = numpy``),
    a local is given numbers and expressions, never a module, type or function
    (``d = numpy.dtype``); tuples are made only to be returned or unpacked (in a kernel,
    also to index or be passed), never repeated or added (``(0,) * 10**9`` would be folded
    in the pool)."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    tuple_names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                   and isinstance(node.value, (ast.Tuple, ast.Name))
                   for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in names:
            raise VectorizeError(f"{node.id} names {type(names[node.id]).__name__} "
                                 "here and cannot be rebound")
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            value = node.value
            if isinstance(value, ast.Name) and value.id in names \
                    and not isinstance(names[value.id], numbers.Number):
                raise VectorizeError(f"{ast.unparse(node)}: only numbers and expressions are "
                                     "assigned in a vectorized function")
            if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) \
                    and isinstance(names.get(value.value.id), _Namespace) \
                    and not isinstance(getattr(names[value.value.id], value.attr, None), float) \
                    and value.attr not in names[value.value.id]._expressions:
                raise VectorizeError(f"{ast.unparse(node)}: only numbers and expressions are "
                                     "assigned in a vectorized function")
        if isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load) \
                or isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.id in tuple_names:
            parent = parents.get(node)
            if not _returned_or_unpacked(node, parents, kernel):
                raise VectorizeError(f"{ast.unparse(parent or node)}: a tuple is returned or "
                                     "unpacked here, nothing else")


def check_function(tree: ast.FunctionDef, names: dict[str, Any], cupy: Any,
                   emitters: tuple = ()) -> None:
    """Refuse anything outside the closed set of nodes and names (see the module).
    *emitters*: for a ``cupyx.jit`` kernel, the classes of the names that write device code
    when called (cupyx.jit's functions, device functions); a kernel may also index arrays,
    read its values' device attributes (``threadIdx.x``, ``a.shape``) and name cupyx.jit."""
    kernel = bool(emitters)
    what = "a kernel" if kernel else "a vectorized function"
    value_attributes = _KERNEL_VALUE_ATTRIBUTES if kernel else _VALUE_ATTRIBUTES
    _check_bindings(tree, names, kernel)
    args = tree.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
        raise VectorizeError(f"{what} takes plain positional parameters only")
    count = 0
    dtype_specs: set[int] = set()   # string constants given to numpy/cupy.dtype(...)
    constant = set(names) | _constant_locals(tree, names)   # what the translator may fold
    for node in ast.walk(tree):
        count += 1
        if count > MAX_NODES:
            raise VectorizeError(f"the function has more than {MAX_NODES} syntax nodes")
        if node is tree:
            continue
        if not isinstance(node, _STATEMENTS + _EXPRESSIONS + _OTHER):
            raise VectorizeError(f"{type(node).__name__} is not translated for a remote GPU "
                                 "(line {})".format(getattr(node, "lineno", "?")))
        if isinstance(node, ast.Constant) and not (
                node.value is None or isinstance(node.value, (bool, int, float, complex))
                or id(node) in dtype_specs):
            raise VectorizeError(f"a {type(node.value).__name__} constant is not translated")
        if _is_dtype_call(node, names):   # numpy.dtype('f').type: folded by the translator
            if node.keywords or len(node.args) != 1 or not isinstance(node.args[0], (ast.Name, ast.Constant)):
                raise VectorizeError(f"{ast.unparse(node)}: dtype() takes one name or type code here")
            if isinstance(node.args[0], ast.Constant):
                _numeric_type(node.args[0].value)   # a numeric type code, never a structure
                dtype_specs.add(id(node.args[0]))
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise VectorizeError(f"the name {node.id} is not available")
        if isinstance(node, ast.Attribute) and node.attr == "type" and _is_dtype_call(node.value, names):
            continue
        if isinstance(node, ast.Attribute) and node.attr in value_attributes and not (
                isinstance(node.value, ast.Name) and node.value.id in names):
            continue   # x.real, (x * y).imag, threadIdx.x: the translator's own attributes
        if isinstance(node, ast.Attribute):
            base = node.value
            module = names.get(base.id) if isinstance(base, ast.Name) else None
            if not isinstance(module, _Namespace) or node.attr.startswith("_") \
                    or not hasattr(module, node.attr):
                raise VectorizeError(f"{ast.unparse(node)} is not available in {what} "
                                     "(math's functions, and numeric types, ufuncs "
                                     "and constants of numpy and cupy are"
                                     + (", and cupyx.jit's names but cg, cub and thrust)"
                                        if kernel else ")"))
        if isinstance(node, ast.Call) and not isinstance(node.func, (ast.Name, ast.Attribute)):
            raise VectorizeError(f"{ast.unparse(node.func)} cannot be called here")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in names and node.func.id not in BUILTINS:
            value = names[node.func.id]
            if not _scalar_type(value) and not isinstance(value, emitters or ()):
                raise VectorizeError(f"{node.func.id} cannot be called here")
        if isinstance(node, ast.keyword) and not (
                node.arg == "dtype" or kernel and node.arg in _KERNEL_KEYWORDS):
            raise VectorizeError(f"the keyword {node.arg or '**'} is not translated here "
                                 + ("(dtype, alignment and width are)" if kernel
                                    else "(dtype= of a ufunc is)"))
        if isinstance(node, ast.Subscript) and not kernel:   # (a kernel's slices: ast.Slice)
            raise VectorizeError(f"{ast.unparse(node)}: indexing is not translated for a remote "
                                 "GPU")
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.LShift)) \
                and _maybe_constant(node.left, constant) and _maybe_constant(node.right, constant):
            base, exponent = _literal_number(node.left), _literal_number(node.right)
            if base is None or exponent is None or exponent > MAX_FOLDED_EXPONENT \
                    or base > 2 ** 64:
                raise VectorizeError(f"{ast.unparse(node)}: powers and shifts of constants are "
                                     "folded only between literals (exponent at most "
                                     f"{MAX_FOLDED_EXPONENT}); write the value")


def _numeric_type(spec: Any) -> type:
    try:
        return check_dtype(spec).type
    except CodecError as exc:
        raise VectorizeError(str(exc)) from None


def _input_type(arg: Any) -> str:
    return arg.dtype.char if hasattr(arg, "dtype") else np.dtype(type(arg)).char


class Vectorized:
    """One vectorized function in a session: a kernel per tuple of input types, built as
    ``cupy.vectorize`` builds it, from the checked tree."""

    def __init__(self, cupy: Any, definition: dict) -> None:
        unknown = set(definition) - {"source", "form", "names", "name"}
        if unknown:
            raise TypeError(f"unexpected vectorize fields: {sorted(unknown)}")
        self.cupy = cupy
        self.source = definition.get("source")
        self.tree = parse_function(self.source, definition.get("form"))
        self.names = resolve_names(definition.get("names", {}), cupy)
        check_function(self.tree, self.names, cupy)
        self.kernels: dict[str, Any] = {}

    def __call__(self, *args: Any) -> Any:
        itypes = "".join(_input_type(a) for a in args)
        kernel = self.kernels.get(itypes)
        if kernel is None:
            kernel = self.kernels[itypes] = self._build(itypes)
        return kernel(*args)

    def _build(self, itypes: str) -> Any:
        try:   # CuPy's translator (its internals: the pool's CuPy version is the one tested)
            from cupyx.jit import _compile, _cuda_types
            generated = _compile.Generated()
            transpile = _compile._transpile_function
        except (ImportError, AttributeError) as exc:
            raise NotImplementedError(f"this pool's CuPy has no JIT translator for "
                                      f"cupy.vectorize ({exc})") from None
        in_types = tuple(_cuda_types.Scalar(t) for t in itypes)
        name = self.tree.name
        code, env = transpile(self.tree, name, "__device__", "numpy", self.names, in_types, None,
                              generated, source=self.source)
        generated.add_code(code)
        preamble = '#include "cupy/float16.cuh"\n' + "\n".join(generated.codes)
        in_params = ", ".join(f"{t.dtype} in{i}" for i, t in enumerate(in_types))
        call = f"{name}({', '.join(f'in{i}' for i in range(len(in_types)))})"
        out_params, body = self.cupy.vectorize._get_body(env.ret_type, call)
        return self.cupy.ElementwiseKernel(in_params, out_params, body, "cupy_vectorize",
                                           preamble=preamble,
                                           options=("-DCUPY_JIT_MODE", "--std=c++17"))
