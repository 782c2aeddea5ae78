"""Which of a held stretch's user kernels its graphs capture, and when a stretch holding
them may be replayed early or run ahead (worker/eager_ops.captured_kernel,
worker/stretch_replay._kernel_changes_only): the rules, on the records alone. The launches
themselves need a GPU (tests/gpu_backend/test_user_kernels_ahead.py)."""

from __future__ import annotations

from gpu_backend.protocol import api
from gpu_backend.protocol import messages as m
from gpu_backend.worker.eager_ops import captured_kernel, eager_by_nature
from gpu_backend.worker.stretch_replay import _kernel_changes_only, _writes_its_own
from gpu_backend.worker.stretches import Op, Slot

RAW = {"code": 'extern "C" __global__ void k(float* a) {}', "name": "k"}
ELEMENTWISE = {"in_params": "float32 x", "out_params": "float32 z", "operation": "z = x",
               "name": "copy_k"}


def _kernel(index, name, definition, args, want=api.NONE, out=None, **kwargs):
    return Op(index, m.KIND_KERNEL, want, out, name, definition, args, kwargs)


def _operator(index, name, args, out):
    return Op(index, m.KIND_OPERATOR, api.ARRAY, Slot("r", out), name, None, args, {})


def test_a_kernel_that_returns_nothing_is_captured_but_a_cooperative_one():
    raw = _kernel(0, "raw", RAW, [[1], [32], [Slot("i", 0), 7]])
    assert captured_kernel(raw) and not eager_by_nature(raw, {})
    module = _kernel(0, "module", {"code": RAW["code"], "function": "k"}, [[1], [32], [Slot("i", 0)]])
    assert not eager_by_nature(module, {})
    given_outputs = _kernel(0, "elementwise", ELEMENTWISE, [Slot("i", 0), Slot("i", 1)])
    assert not eager_by_nature(given_outputs, {})
    cooperative = _kernel(0, "raw", {**RAW, "enable_cooperative_groups": True},
                          [[1], [32], [Slot("i", 0)]])
    assert not captured_kernel(cooperative) and eager_by_nature(cooperative, {})
    # (a fused program that returns nothing, a function that returns nothing: as before)
    assert eager_by_nature(_kernel(0, "fuse", {"params": 1, "ops": []}, [Slot("i", 0)]), {})
    copyto = Op(0, m.KIND_FUNCTION, api.NONE, None, "copyto", None, [Slot("i", 0), Slot("i", 1)], {})
    assert eager_by_nature(copyto, {})


def test_a_user_kernel_writing_only_what_the_stretch_made_changes_nothing_else():
    made = {0: _operator(0, "mul", [Slot("i", 0), Slot("p", 0)], 0)}
    raw_on_made = _kernel(1, "raw", RAW, [[1], [32], [Slot("r", 0), 5]])
    assert _kernel_changes_only(raw_on_made, made, inputs_too=False)
    raw_on_input = _kernel(1, "raw", RAW, [[1], [32], [Slot("r", 0), Slot("i", 1)]])
    assert not _kernel_changes_only(raw_on_input, made, inputs_too=False)   # (never early)
    assert _kernel_changes_only(raw_on_input, made, inputs_too=True)        # (run ahead)
    shared = _kernel(1, "raw", RAW, [[1], [32], [Slot("r", 0)]], shared_mem=128)
    assert _kernel_changes_only(shared, made, inputs_too=False)


def test_a_kernel_result_is_the_stretchs_own_only_where_cupy_makes_it():
    x = Slot("i", 0)
    fresh = {0: _kernel(0, "elementwise", ELEMENTWISE, [x], want=api.ARRAY, out=Slot("r", 0))}
    assert _writes_its_own(Slot("r", 0), fresh)
    reduced_into = {0: Op(0, m.KIND_KERNEL, api.ARRAY, Slot("r", 0), "reduction",
                          {"in_params": "T x", "name": "r"}, [x], {"out": Slot("i", 1)})}
    assert not _writes_its_own(Slot("r", 0), reduced_into)   # (its out= is what it returns)
    viewed = {0: Op(0, m.KIND_METHOD, api.ARRAY, Slot("r", 0), "reshape", x, [8, 8], {})}
    raw_on_view = _kernel(1, "raw", RAW, [[1], [32], [Slot("r", 0)]])
    assert not _kernel_changes_only(raw_on_view, viewed, inputs_too=True)   # (may be x itself)
    sliced = {0: Op(0, m.KIND_OPERATOR, api.ARRAY, Slot("r", 0), "getitem", None,
                    [x, [slice(1, None, None)]], {})}
    assert not _kernel_changes_only(raw_on_view, sliced, inputs_too=False)
    assert _kernel_changes_only(raw_on_view, sliced, inputs_too=True)       # (x's view: x's buffer)


def test_what_a_ufunc_makes_is_the_stretchs_own_and_what_asarray_gives_is_not():
    """``a = exp(x); a /= a.sum()`` writes an array the stretch made (a ufunc's call makes a
    new one: moving_views.fresh_result); ``a = asarray(x); a += 1`` may write x itself."""
    x = Slot("i", 0)
    exp = {0: Op(0, m.KIND_FUNCTION, api.ARRAY, Slot("r", 0), "exp", None, [x], {})}
    assert _writes_its_own(Slot("r", 0), exp)
    into = {0: Op(0, m.KIND_FUNCTION, api.ARRAY, Slot("r", 0), "exp", None, [x], {"out": Slot("i", 1)})}
    assert not _writes_its_own(Slot("r", 0), into)
    same = {0: Op(0, m.KIND_FUNCTION, api.ARRAY, Slot("r", 0), "asarray", None, [x], {})}
    assert not _writes_its_own(Slot("r", 0), same)
    assert _writes_its_own(Slot("r", 0), same, inputs_too=False) is False
    pos = {0: Op(0, m.KIND_OPERATOR, api.ARRAY, Slot("r", 0), "pos", None, [x], {})}
    assert not _writes_its_own(Slot("r", 0), pos)


def test_arrays_made_from_sizes_are_the_stretchs_own_and_a_reductions_given_output_is_not():
    x = Slot("i", 0)
    for name, args in (("empty_like", [x]), ("zeros", [[4, 4]]), ("full", [8, 0.5]), ("arange", [10])):
        made = {0: Op(0, m.KIND_FUNCTION, api.ARRAY, Slot("r", 0), name, None, args, {})}
        assert _writes_its_own(Slot("r", 0), made), name
    reduce = {"in_params": "T x", "out_params": "T y", "name": "r"}
    returned = {0: Op(0, m.KIND_KERNEL, api.ARRAY, Slot("r", 0), "reduction", reduce, [x], {})}
    assert _writes_its_own(Slot("r", 0), returned)
    given = {0: Op(0, m.KIND_KERNEL, api.ARRAY, Slot("r", 0), "reduction", reduce, [x, Slot("i", 1)], {})}
    assert not _writes_its_own(Slot("r", 0), given)   # (``rk(x, y)`` returns y itself)
    simple = {0: Op(0, m.KIND_KERNEL, api.ARRAY, Slot("r", 0), "simple_reduction", {"name": "s"},
                    [x, None, None, Slot("i", 1)], {})}
    assert not _writes_its_own(Slot("r", 0), simple)   # (``f(x, None, None, y)`` returns y)
    simple_fresh = {0: Op(0, m.KIND_KERNEL, api.ARRAY, Slot("r", 0), "simple_reduction",
                          {"name": "s"}, [x, 0], {})}
    assert _writes_its_own(Slot("r", 0), simple_fresh)
