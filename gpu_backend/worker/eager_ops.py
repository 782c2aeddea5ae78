"""Which ops of a held stretch run eagerly between its graphs whatever happens (graph
replay, worker/graph_replay.py): those that read device data on the host, call an object's
method or write through no operator but a user's kernel; libraries that refuse capture
(cuBLAS, cuSOLVER, cuSPARSE), but for the matrix products the graphs make themselves by cuBLAS's GEMM
(devices/product_capture.py); random draws (a ``RandomState``'s position is cuRAND's on the
host), but for a ``Generator``'s plainest draws, whose state is on the device; and ops
whose result's shape its arrays' values decide. Everything else is captured, and an op that
then refuses capture runs eagerly from the next capture on (GraphState.eager): these rules
say only what is known before any op runs.
"""

from __future__ import annotations

import numpy as np

from ..devices.product_capture import PRODUCT_CALLS, product_pair, reaches_cublas, takes
from ..protocol import api
from ..protocol import messages as m
from ..protocol.stretch_records import slots_in
from ..protocol.stretches import user_kernel
from .draw_journal import CAPTURED_DRAWS, STATE_CLASS
from .stretches import Op, Slot

__all__ = ["eager_by_nature", "lane_runs_eagerly", "captured_draw", "captured_kernel"]

_OPERATOR, _OBJECT, _METHOD = m.KIND_OPERATOR, m.KIND_OBJECT, m.KIND_METHOD
_STATE_PREFIX = STATE_CLASS + "."
#: products the graphs make where their operands allow (devices/product_capture.py); eager
#: by :func:`_product_eager`'s rule, and the steady lane runs them ahead where they are
_PRODUCTS = frozenset({"matmul", "dot"})
_NONE, _VALUE = api.NONE, api.VALUE
#: Functions run eagerly between graphs: libraries that refuse capture (cuBLAS, cuSOLVER,
#: cuSPARSE, SciPy's ports), and random draws, whose generator's state lives on the host.
_EAGER_PREFIXES = ("random.", "linalg.", "cupyx.scipy.", "testing.")
#: Functions and methods whose result's shape depends on their arrays' values (CUDA refuses
#: them under capture; the NumPy device's recorded calls would give another shape): eager.
_BY_VALUES = frozenset({"nonzero", "argwhere", "flatnonzero", "extract", "compress", "unique",
                        "unique_values", "unique_all", "unique_counts", "unique_inverse",
                        "trim_zeros", "intersect1d", "union1d", "setdiff1d", "setxor1d",
                        "bincount", "repeat", "where", "delete", "insert", "roots",
                        "polyadd", "polysub", "polymul", "real_if_close"})
_EAGER_NAMES = frozenset({"imatmul", "vdot", "inner", "outer", "tensordot",
                          "einsum", "kron", "matvec", "vecmat", "vecdot", "cross"})
#: ``linalg.norm``'s orders that take a matrix's singular values (cuSOLVER, which refuses
#: capture); every other order is element-wise work and reductions, captured with the ops
#: around it. (Eager as the rest of ``linalg.``, a loop reading ``float(linalg.norm(r))``
#: ran the norm's five CuPy calls between two graphs at every replay: heat2d's worker
#: 0.42 s of 2.7 s profiled, H100 run 33.) A vector's 2-norm is a reduction too, but an
#: op's arguments do not say its array's dimensions: eager, as a matrix's would be.
_NORM_BY_SOLVER = (2, -2, "nuc")


def _plain_number(spec: object) -> bool:
    """Whether an upload's dtype *spec* (its op's name) is one of NumPy's numbers or bools:
    its buffer a plain array on either device."""
    if type(spec) is not str:
        return False
    try:
        return np.dtype(spec).kind in "biufc"
    except TypeError:   # (an extension's, bfloat16: not NumPy's own)
        return False


def eager_by_nature(op: Op, inputs: dict, int_results: frozenset = frozenset()) -> bool:
    """Whether *op* runs eagerly between the graphs whatever happens (*inputs*: the
    stretch's input arrays by slot, as captured; a replay's guards keep their dtypes;
    *int_results*: the result slots whose arrays were integers in the offered run, which
    the same ops on inputs of the same dtypes make integers again)."""
    if op.kind == _OBJECT:
        return not captured_draw(op)
    if op.kind == m.KIND_UPLOAD:   # (a number's: captured, a memcpy node from a page-locked
        return not _plain_number(op.name)   # place; a structure's, bfloat16's: made between)
    if op.want == api.ARRAYS:   # (a call of several results, ``modf``, ``linalg.qr``: its
        return True              # pieces a slot each, made between the graphs)
    if op.want == _VALUE or (op.want == _NONE and op.kind != _OPERATOR
                             and not captured_kernel(op)):
        return True
    name = op.name
    if name in _BY_VALUES:   # (a result whose shape its array's values decide)
        return True
    if name in ("getitem", "setitem"):
        index = [s for s in slots_in(op.args[1:2]) if type(s) is Slot and s.kind != "p"]
        # an index of arrays: a boolean mask's selection is sized by its values; an index of
        # integer arrays (a minibatch's uploaded indices, ``centres[labels]`` of an argmin,
        # ``p[rows, y]`` of an arange) is read by a gather of the index's shape, captured as
        # any kernel (an assignment through one stays eager)
        if index and not (name == "getitem" and _integer_inputs(index, inputs, int_results)):
            return True
    if name == "linalg.norm":
        return _norm_by_solver(op)
    if (op.kind, name) in PRODUCT_CALLS:
        return _product_eager(op, inputs)
    return name in _EAGER_NAMES or name.startswith(_EAGER_PREFIXES)


def captured_kernel(op: Op) -> bool:
    """Whether *op* is a user's kernel that returns nothing and is captured as any launch: a
    ``RawKernel``, a ``RawModule``'s function, a ``cupyx.jit.rawkernel``, an
    ``ElementwiseKernel`` given its outputs. Its writes into the arrays it is given are
    writes into the graphs' buffers, as an in-place operator's are (every array it is given
    is taken as written: moving_views.written_operands), so that graphs and eager runs
    write the same places. A kernel takes its scalars by value: a NumPy scalar that is a
    stretch parameter (protocol/stretches.kernel_param) is baked into the capture, and a
    replay given another value runs that launch eagerly (``StretchGraph.baked``); a Python
    scalar is part of the key. A cooperative launch (``enable_cooperative_groups``) stays
    eager. Before, every such kernel ran eagerly between two graphs (H200 run 289: a loop
    of three user kernels 1.78x local, its replays never run ahead)."""
    if not user_kernel(op.kind, op.name):   # (a fused program returning nothing: the
        return False                           # function path's, as before)
    definition = op.target
    return isinstance(definition, dict) and not definition.get("enable_cooperative_groups")


def captured_draw(op: Op) -> bool:
    """Whether object op *op* is a ``Generator``'s draw the graphs capture: a method of
    draw_journal.CAPTURED_DRAWS (its kernel moves the bit generator's states on the
    device: a launch draws the next numbers), on a generator named by its own id, given plain
    values and parameters only (no array; a parameter's value is baked into the graph, which
    serves only replays given that value: StretchGraph.baked) and no ``out=``, making an
    array. A replay that may be undone copies the generator's state before its graphs launch
    (StretchGraphs.before_draws), as before an eager draw."""
    name = op.name
    if op.want != api.ARRAY or type(name) is not str or not name.startswith(_STATE_PREFIX) \
            or name[len(_STATE_PREFIX):] not in CAPTURED_DRAWS or type(op.target) is not int \
            or "out" in op.kwargs:
        return False
    return all(slot.kind == "p" for slot in slots_in([op.args, op.kwargs]))


def _product_eager(op: Op, inputs: dict) -> bool:
    """Whether a product (``a @ b``, ``matmul``, ``dot``) runs eagerly whatever happens: given
    more than its two operands (``out=``), or operands known before it runs (the stretch's
    inputs) with which CuPy would reach cuBLAS beyond the products the graphs make
    (devices/product_capture.py: a batch of matrices, mixed dtypes). A product through a
    result is tried in the capture: refused there, it runs eagerly from the next capture on."""
    if any(v is not None for v in op.kwargs.values()) \
            or len(op.args) != (1 if op.kind == _METHOD else 2):
        return True
    arrays = []
    for slot in product_pair(op.kind, op.target, op.args):
        if type(slot) is not Slot or slot.kind == "p":
            return True   # (a Python value: CuPy's own product, eager as before)
        array = inputs.get(slot.n) if slot.kind == "i" else None
        if array is None:
            return False  # (a result: tried)
        arrays.append(array)
    return not takes(op.name, *arrays) and reaches_cublas(*arrays)


def _integer_inputs(slots: list, inputs: dict, int_results: frozenset) -> bool:
    """Whether every one of *slots* is an input whose array has an integer dtype, or a
    result of the stretch's that is an integer array (*int_results*)."""
    for slot in slots:
        if slot.kind == "r":
            if slot.n not in int_results:
                return False
            continue
        a = inputs.get(slot.n) if slot.kind == "i" else None
        if a is None or getattr(a, "dtype", None) is None or a.dtype.kind not in "iu":
            return False
    return True


def _norm_by_solver(op: Op) -> bool:
    """Whether a ``linalg.norm`` op may take singular values (its order, ``args[1]`` or
    ``ord=``, one of _NORM_BY_SOLVER, or not a plain value): then it runs eagerly."""
    order = op.args[1] if len(op.args) > 1 else op.kwargs.get("ord")
    if order is None or order == "fro":
        return False
    return type(order) not in (int, float) or order in _NORM_BY_SOLVER


def lane_runs_eagerly(op: Op) -> bool:
    """Whether the steady lane (worker/steady_lane.py) may run eager *op* in its run ahead
    as the generic path does: a library's product or solver (cuBLAS, cuSOLVER: ``x @ w``,
    ``linalg.solve``) or a random draw (``random.uniform``, a ``RandomState``'s or a
    ``Generator``'s method: drawn ahead and undone from the generator's journal,
    worker/draw_journal.py, as the generic run ahead's), whose one array result is new
    every time and copied into the buffer the graphs after it read, or a ``getitem`` whose
    bounds are parameters (worker/moving_views.py: a view at the step's bounds, copied so
    too). Not a value read on
    the host, a write (``out=``, an assignment, a shuffle), a seed, or a result sized by
    its array's values."""
    name = op.name
    if op.want != api.ARRAY or "out" in op.kwargs or name in _BY_VALUES:
        return False
    if op.kind == _OPERATOR and name == "getitem":   # (a moving view: its bounds stepped,
        return any(s.kind == "p" for s in slots_in(op.args[1:2]))   # copied as a draw's is)
    if op.kind == _OBJECT:   # (an object's method: a generator's draw)
        return name.startswith("random.")
    return name in _EAGER_NAMES or name in _PRODUCTS or name.startswith(("linalg.", "random."))
