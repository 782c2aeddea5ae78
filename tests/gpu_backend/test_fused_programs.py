"""What a fused program says (gpu_backend/protocol/fused_programs.py): the parameters it
writes in place, which the worker's replay copies back and nothing else; a program it
cannot read is taken to write everything, as any kernel."""

from __future__ import annotations

from gpu_backend.protocol.fused_programs import fused_writes


def _program(params, *ops):
    return {"params": params, "ops": [list(op) for op in ops]}


def test_a_program_making_new_arrays_writes_nothing():
    assert fused_writes(_program(2, ("o", "mul", None, [[0, 0], [1, 0.5]], {}),
                                 ("f", "sum", None, [[0, 2]], {}))) == frozenset()


def test_in_place_operators_out_and_later_writes_through_the_rebound_name():
    program = _program(
        3,
        ("o", "iadd", None, [[0, 0], [0, 1]], {}),            # x += y       (slot 3 is x)
        ("o", "imul", None, [[0, 3], [1, 2.0]], {}),          # x *= 2       (slot 4 is x)
        ("f", "multiply", None, [[0, 1], [1, 0.5]], {"out": [0, 1]}),   # y *= .5 by out=
        ("o", "add", None, [[0, 2], [0, 4]], {}))             # a new array
    assert fused_writes(program) == frozenset({0, 1})


def test_a_program_that_does_not_read_writes_everything():
    assert fused_writes({"params": 1}) is None
    assert fused_writes({"params": 1, "ops": [["o", "iadd"]]}) is None
    assert fused_writes(None) is None
