"""``forget_interactions`` at the interaction memory agent's service: the context files go,
and so do the answers kept for the sender's file ops (files are not transactional, so a
retry of one is answered from memory: that answer carries the file's text)."""

from __future__ import annotations

from pathlib import Path

from spade_memory.interaction.context_dir import ContextDirectory
from spade_memory.interaction.service import InteractionMemoryService
from spade_memory.interaction.store import InteractionStore
from spade_memory.protocol.context import SaveKnowledge, SearchContext
from spade_memory.protocol.interaction_forget import ForgetInteractions

ALICE, BOB = "alice@localhost", "bob@localhost"


async def test_forget_takes_the_answers_kept_for_file_ops(tmp_path: Path) -> None:
    store = await InteractionStore.open(tmp_path / "notes.db", purge_every=None)
    service = InteractionMemoryService(store, ContextDirectory(tmp_path / "context"))
    runbook = SaveKnowledge(name="runbook", content="the root password is hunter2")
    try:
        await service.apply(ALICE, runbook, "k-1")
        kept = await service.apply(BOB, runbook, "k-1")
        counted = await service.apply(ALICE, ForgetInteractions(dry_run=True))
        assert (counted.files, counted.replies) == (1, 1)
        forgotten = await service.apply(ALICE, ForgetInteractions())
        assert (forgotten.files, forgotten.replies, forgotten.dry_run) == (1, 1, False)
        assert not (await service.apply(ALICE, SearchContext(query="hunter2"))).entries
        await service.apply(ALICE, runbook, "k-1")  # applied again, not answered from memory
        assert (await service.apply(ALICE, SearchContext(query="hunter2"))).entries
        assert await service.apply(BOB, runbook, "k-1") == kept  # bob's answer stays
    finally:
        await store.close()
