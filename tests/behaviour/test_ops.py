"""An op names its result through its base class (``class StoreMemory(Op[Stored])``)
without pydantic building a generic class for each op: that was a third of what
importing the protocol cost every command that starts."""

from __future__ import annotations

from spade_memory.protocol.memories import MemoryStats, MemoryStatsOp, Stored, StoreMemory
from spade_memory.protocol.ops import Op, Record, op_types
from spade_memory.server.registry import SERVICES


def test_every_op_names_its_result_and_no_generic_class_is_built_for_it() -> None:
    ops = [op for service in SERVICES for op in op_types(service.union)]
    assert len(ops) > 50
    for op in ops:
        assert issubclass(op.result, Record) and op.result is not Record, op
        built = [base for base in op.__mro__ if base.__dict__.get("__pydantic_generic_metadata__",
                 {}).get("origin") is Op]  # fmt: skip
        assert built == [], op
    assert StoreMemory.result is Stored and StoreMemory.__mro__[1] is Op
    assert MemoryStatsOp.result is MemoryStats


def test_a_subclass_of_an_op_answers_as_its_parent_and_parses_as_one() -> None:
    class QuietStats(MemoryStatsOp):
        pass

    assert QuietStats.result is MemoryStats
    assert QuietStats.model_validate({"op": "memory_stats"}).tag() == "memory_stats"
