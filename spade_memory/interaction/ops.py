"""Every op the interaction memory agent serves: notes, working memory, context directory."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from .context_ops import ContextOp
from .forget import ForgetInteractions
from .notes import NoteOp
from .stats import InteractionStatsOp
from .working_ops import WorkingMemoryOp

InteractionOp = Annotated[
    NoteOp | WorkingMemoryOp | ContextOp | ForgetInteractions | InteractionStatsOp,
    Field(discriminator="op"),
]
"""Any request the interaction memory agent serves, tagged by ``op``."""

interaction_ops: TypeAdapter[InteractionOp] = TypeAdapter(InteractionOp)
