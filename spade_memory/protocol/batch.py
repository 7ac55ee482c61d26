"""Several ops in one message: where a memory agent's throughput lives.

Each XMPP message costs slixmpp CPU on both ends, however little it carries, so
``{"op": "batch", "ops": [...]}`` carries up to ``Limits.max_batch_ops`` ops of
one service in one request. They are applied in order, in one transaction of the
service's store, each on its own (one bad op fails alone with its typed
condition and changes nothing), and each write is applied once per
``<request id>#<index>``, so a retried batch repeats nothing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, TypeAdapter, ValidationError
from pydantic_core import from_json

from spade_memory.protocol.errors import BadRequest
from spade_memory.protocol.ops import Op, Record, describe


class BatchItem(Record):
    """The outcome of one op of a batch: its result, or its failure."""

    ok: bool
    result: dict[str, Any] | None = None
    condition: str | None = None
    text: str | None = None
    proposal: str | None = None
    """The proposal a write of a governed space became (``pending-approval``)."""


class BatchResults(Record):
    """One item per op of the batch, in the same order."""

    results: list[BatchItem]


class Batch(Op[BatchResults]):
    """A request carrying several ops for the same memory agent."""

    op: Literal["batch"] = "batch"
    ops: list[dict[str, Any]] = Field(
        min_length=1, description="Requests as they would be sent alone, applied in order"
    )


batch_op: TypeAdapter[Batch] = TypeAdapter(Batch)


def parse_batch(body: str) -> Batch | None:
    """The batch a request body carries; None if it is not a batch (then it is parsed
    as a single op). A cheap substring test spares parsing every other body twice."""
    if '"batch"' not in body:
        return None
    try:
        data = from_json(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("op") != "batch":
        return None
    try:
        return batch_op.validate_python(data)
    except ValidationError as error:
        raise BadRequest(describe(error)) from None


def ops_in(body: str) -> int:
    """How many ops a request body carries, for the weight of its turn: a batch's ops
    (whatever else is wrong with it), else one."""
    if '"batch"' not in body:
        return 1
    try:
        data = from_json(body)
    except ValueError:
        return 1
    if not isinstance(data, dict) or data.get("op") != "batch":
        return 1
    ops = data.get("ops")
    return max(1, len(ops)) if isinstance(ops, list) else 1


def item_request_id(request_id: str | None, index: int) -> str | None:
    """The request id of one op of a batch, so a retried batch applies nothing twice."""
    return None if request_id is None else f"{request_id}#{index}"
