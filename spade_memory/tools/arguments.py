"""A model's arguments to a memory tool, turned into the op it sends.

Models send ``"5"`` for 5 and leave out what they may: the arguments are coerced here
(the wire itself stays strict), bounded as the tool says, and given the caller's
defaults: where a store goes, where a read looks, which conversation a note is for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from spade_memory.protocol.ops import PERSONAL, Op, describe
from spade_memory.tools.spec import ToolSpec


@dataclass(frozen=True)
class Defaults:
    """What a tool call is given besides the model's arguments."""

    spaces: Sequence[str] = ()
    """Shared spaces that a read draws on beside the caller's own."""
    default_space: str | None = None
    """Where a store goes when the model names no space (None: the caller's own)."""
    conversation_id: str | None = None
    """The conversation a note is for (``remember_interaction_info``)."""

    @property
    def readable(self) -> list[str] | None:
        """Where a read looks when the model names no space (None: the caller's own)."""
        return [PERSONAL, *self.spaces] if self.spaces else None


class ToolArgumentError(ValueError):
    """The model's arguments do not make a valid op; the text says why, for the model."""


def op_for(spec: ToolSpec, arguments: dict[str, Any], defaults: Defaults) -> Op[Any]:
    """The op ``spec`` sends for the model's ``arguments``.

    Returns the op, its limits lowered to the tool's maxima; raises
    ``ToolArgumentError`` with a readable reason (an unknown argument, a missing
    conversation, what validation found).
    """
    unexpected = sorted(set(arguments) - set(spec.parameters))
    if unexpected:
        allowed = ", ".join(spec.parameters) or "no arguments"
        raise ToolArgumentError(f"unexpected argument {', '.join(unexpected)} (it takes {allowed})")
    values = dict(arguments)
    for parameter, bounds in spec.bounds.items():
        if parameter not in values and "default" in bounds:
            values[parameter] = bounds["default"]
    if spec.space_default is not None and "space" not in values:
        store = spec.space_default == "store"
        values["space"] = defaults.default_space if store else defaults.readable
    if "conversation_id" in spec.filled:
        if defaults.conversation_id is None:
            raise ToolArgumentError("no conversation is active")
        values["conversation_id"] = defaults.conversation_id
    try:
        op = spec.op.model_validate(values, strict=False)
    except ValidationError as error:
        raise ToolArgumentError(describe(error)) from None
    lowered = {
        parameter: bounds["maximum"]
        for parameter, bounds in spec.bounds.items()
        if "maximum" in bounds and getattr(op, parameter) > bounds["maximum"]
    }
    return op.model_copy(update=lowered) if lowered else op
