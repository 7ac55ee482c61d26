"""The base memory agent's ad-hoc commands (XEP-0050, see ``adhoc``): search, store,
recent, stats, the spaces' list and grant, and a governed space's proposals and their
decision (approve or reject), each a form in a person's client."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json
from slixmpp.plugins.xep_0004 import Form

from spade_memory.protocol.memories import CATEGORIES, MemoryList, MemoryStats
from spade_memory.protocol.ops import Record
from spade_memory.protocol.spaces import ProposalDecided, ProposalList, SpaceDetails, SpaceList
from spade_memory.xmpp.adhoc import Command, Field

COLUMNS = ("id", "category", "content", "confidence")
"""The columns a list of memories shows."""


def _text(value: Any) -> str:
    """A value as the record's JSON writes it (``true``, not Python's ``True``)."""
    return to_json(value).decode() if isinstance(value, bool) else str(value)


def _table(form: Form, columns: Sequence[str], records: Iterable[BaseModel]) -> None:
    """``columns`` as the form's reported fields, and a row of them per record (each
    value as the record's JSON gives it)."""
    for column in columns:
        form.add_reported(column, label=column)
    for record in records:
        row = record.model_dump(mode="json", include=set(columns))
        form.add_item({column: _text(row[column]) for column in columns})


def _memories(result: Record, form: Form) -> None:
    assert isinstance(result, MemoryList)
    _table(form, COLUMNS, result.memories)


def _fields(result: Record, form: Form) -> None:
    """Each field of the result as a read-only field."""
    for name, value in result.model_dump(mode="json").items():
        if value is not None and not isinstance(value, list | dict):
            form.add_field(var=name, ftype="text-single", label=name, value=_text(value))


def _stats(result: Record, form: Form) -> None:
    assert isinstance(result, MemoryStats)
    _fields(result, form)
    for category, count in sorted(result.category_counts.items()):
        form.add_field(var=f"category:{category}", ftype="text-single", label=category,
                       value=str(count))  # fmt: skip


def _spaces(result: Record, form: Form) -> None:
    assert isinstance(result, SpaceList)
    _table(form, ("name", "owner", "role"), result.spaces)


def _members(result: Record, form: Form) -> None:
    assert isinstance(result, SpaceDetails)
    form.add_field(var="space", ftype="text-single", label="space", value=result.name)
    _table(form, ("member", "role"), result.members)


PROPOSAL_COLUMNS = ("id", "proposer", "op", "expires_at")
"""The columns a list of proposals shows."""


def _proposals(result: Record, form: Form) -> None:
    assert isinstance(result, ProposalList)
    _table(form, PROPOSAL_COLUMNS, result.proposals)


def _decided(result: Record, form: Form) -> None:
    assert isinstance(result, ProposalDecided)
    _fields(result.proposal, form)
    if result.result is not None and "id" in result.result:
        form.add_field(var="memory", ftype="text-single", label="memory",
                       value=str(result.result["id"]))  # fmt: skip


def _decide(values: dict[str, str]) -> dict[str, Any]:
    decision = values["decision"]
    if decision not in ("approve", "reject"):
        raise ValueError(f"decision is approve or reject, not {decision!r}")
    body: dict[str, Any] = {"op": "decide_proposal", "space": values["space"]}
    body.update(proposal=values["proposal"], approve=decision == "approve")
    if "reason" in values:
        body["reason"] = values["reason"]
    return body


def _limit(values: dict[str, str], default: int) -> int:
    return int(values.get("limit", default))


def _search(values: dict[str, str]) -> dict[str, Any]:
    body: dict[str, Any] = {"op": "search_memories", "query": values["query"]}
    body["limit"] = _limit(values, 10)
    if "category" in values:
        body["category"] = values["category"]
    return body


def _store(values: dict[str, str]) -> dict[str, Any]:
    body: dict[str, Any] = {"op": "store_memory", "category": values["category"]}
    body["content"] = values["content"]
    if "context" in values:
        body["context"] = values["context"]
    return body


CATEGORY = Field("category", "Category", options=CATEGORIES)
COMMANDS: tuple[Command, ...] = (
    Command(
        "search", "Search memories", _search, _memories,
        (Field("query", "Search for", required=True), Field("limit", "At most", default="10"),
         CATEGORY),
    ),
    Command(
        "store", "Store a memory", _store, _fields,
        (Field("category", "Category", required=True, options=CATEGORIES, default="fact"),
         Field("content", "Content", required=True), Field("context", "Context")),
    ),
    Command(
        "recent", "Recent memories",
        lambda values: {"op": "recent_memories", "limit": _limit(values, 20)}, _memories,
        (Field("limit", "At most", default="20"),),
    ),
    Command("stats", "Memory statistics", lambda _values: {"op": "memory_stats"}, _stats),
    Command("spaces", "My spaces", lambda _values: {"op": "list_spaces"}, _spaces),
    Command(
        "grant", "Grant a role in a space",
        lambda values: {"op": "grant", "space": values["space"], "member": values["member"],
                        "role": values["role"]},
        _members,
        (Field("space", "Space", required=True), Field("member", "Member (bare JID)",
         required=True), Field("role", "Role", required=True,
         options=("reader", "writer", "admin"), default="reader")),
    ),
    Command(
        "proposals", "Writes waiting for approval",
        lambda values: {"op": "list_proposals", "space": values["space"]}, _proposals,
        (Field("space", "Governed space", required=True),),
    ),
    Command(
        "decide", "Approve or reject a proposal", _decide, _decided,
        (Field("space", "Governed space", required=True),
         Field("proposal", "Proposal id", required=True),
         Field("decision", "Decision", required=True, options=("approve", "reject"),
               default="approve"),
         Field("reason", "Why (told to the proposer)")),
    ),
)  # fmt: skip
"""What a person can do from a client that runs ad-hoc commands."""
