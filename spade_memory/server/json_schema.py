"""JSON Schema of every request and reply of every registered service, for peers in
any language (``spade-memory schema``)."""

from __future__ import annotations

from typing import Any

from spade_memory.protocol.batch import Batch
from spade_memory.protocol.ops import op_types
from spade_memory.server.registry import SERVICES
from spade_memory.serving.plugin import ServicePlugin
from spade_memory.xmpp import wire


def json_schemas() -> dict[str, Any]:
    """The envelope, then each service's request union and the reply of each op."""
    return {
        "envelope": wire.envelope_schema(),
        "services": {service.name: _service_schema(service) for service in SERVICES},
        "batch": {"request": Batch.model_json_schema(), "reply": Batch.result.model_json_schema()},
        "failure": wire.Failure.model_json_schema(),
    }


def _service_schema(service: ServicePlugin) -> dict[str, Any]:
    return {
        "request": service.ops.json_schema(),
        "replies": {op.tag(): op.result.model_json_schema() for op in op_types(service.union)},
    }


def op_names() -> list[str]:
    """Every op's tag, once (the base memory and the beads sync agent share a few)."""
    return list(dict.fromkeys(op.tag() for service in SERVICES for op in op_types(service.union)))


def op_schema(tag: str) -> dict[str, Any] | None:
    """The JSON Schema of one op's request and reply at each service serving an op
    ``tag`` (``spade-memory schema OP``); None when none does."""
    serving = {
        service.name: {"request": op.model_json_schema(), "reply": op.result.model_json_schema()}
        for service in SERVICES
        for op in op_types(service.union)
        if op.tag() == tag
    }
    return {"op": tag, "services": serving} if serving else None
