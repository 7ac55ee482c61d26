"""Every op the interaction memory agent serves: notes, working memory, context directory."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from ..ops import Op, op_types
from .context_ops import ContextOp
from .notes import NoteOp
from .working_ops import WorkingMemoryOp

InteractionOp = Annotated[NoteOp | WorkingMemoryOp | ContextOp, Field(discriminator="op")]
"""Any request the interaction memory agent serves, tagged by ``op``."""

interaction_ops: TypeAdapter[InteractionOp] = TypeAdapter(InteractionOp)

STORED_OPS: frozenset[type[Op[Any]]] = frozenset(op_types(NoteOp | WorkingMemoryOp))
"""The ops the store applies in its transactions; the service applies the others (files)."""
