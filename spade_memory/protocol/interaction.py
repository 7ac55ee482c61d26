"""Every op the interaction memory agent serves: notes, working memory, context directory,
rooms."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from spade_memory.protocol.context import ContextOp
from spade_memory.protocol.conversation_stats import InteractionStatsOp
from spade_memory.protocol.interaction_forget import ForgetInteractions
from spade_memory.protocol.notes import NoteOp
from spade_memory.protocol.ops import DEFERRED
from spade_memory.protocol.rooms import RoomOp
from spade_memory.protocol.working import WorkingMemoryOp

InteractionOp = Annotated[
    NoteOp | WorkingMemoryOp | ContextOp | ForgetInteractions | InteractionStatsOp | RoomOp,
    Field(discriminator="op"),
]
"""Any request the interaction memory agent serves, tagged by ``op``."""

interaction_ops: TypeAdapter[InteractionOp] = TypeAdapter(InteractionOp, config=DEFERRED)
