"""A property-based fuzzer (hypothesis) against all three memory agents, over the wire.

Generated requests: broken JSON, JSON that is not an object, unknown ops,
writes with a wrong-typed, missing or extra field, writes naming another
owner, oversized content, batches of bad writes (space, grant and share ops
among them), and reads carrying hostile strings as queries, ids and space
names (FTS5 syntax, SQL, path names, NUL and control characters as JSON
escapes, lone surrogates) and hostile numbers. The agents' own op schemas are
the oracle: what they reject must get a typed ``failure``/``refuse``; a
valid read may also be answered ``inform``; nothing may be an
``internal-server-error``. Stored data (SQLite rows, the directory of spaces,
the context directory, the beads file) is compared before and after, and the
agents keep serving.

Characters XML cannot carry at all (NUL, most C0 controls, U+FFFE/U+FFFF)
are sent as JSON escapes: no XMPP client can put them raw into a stanza.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError
from spade.message import Message

from spade_memory.interaction.context_index import INDEX_FOLDER
from spade_memory.protocol.batch import batch_op
from spade_memory.protocol.beads import beads_sync_ops
from spade_memory.protocol.interaction import interaction_ops
from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import base_memory_ops
from spade_memory.testing import MemoryServiceProcess
from spade_memory.xmpp.lifecycle import stop_agent
from spade_memory.xmpp.wire import Failure
from tests.support.harness import ClientAgent, send_raw, start_client, unique_jid

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

PER_EXAMPLE = 50
"""Requests generated per hypothesis example, sent at once."""

ADAPTERS: dict[str, TypeAdapter[Any]] = {
    "base-memory": base_memory_ops,
    "interaction-memory": interaction_ops,
    "beads-sync": beads_sync_ops,
}
TYPED_FAILURES = {"bad-request", "not-authorized", "item-not-found", "resource-constraint"}
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

HOSTILE_TEXT = [
    '"', '""', '"unbalanced', "*", "prefix*", "a OR b", "NOT", "AND AND", "NEAR(a b, 2)",
    "content:secret", "{content context}:x", "^start", "a + b", "(", ")", "-minus", "col:",
    "'; DROP TABLE memories; --", "1' OR '1'='1", "%", "_", "\\", "' UNION SELECT * FROM notes --",
    "../../etc/passwd", "/etc/shadow", "..\\..\\windows", "~/.ssh/id_rsa", "a/../../b", ".",
    "\x00", "null\x00byte", "\x01\x02\x1f", "\u2028\u2029", "\ud800", "\udfff", "\ufeff", "\u202e",
    "😀" * 50, "   ", "",
]  # fmt: skip
HOSTILE_NUMBERS = [0, -1, -(2**63), 2**63, 10**30, 2**31, 1.5, float("inf"), float("nan"), True]


def hostile_strings() -> st.SearchStrategy[str]:
    return st.sampled_from(HOSTILE_TEXT) | st.text(max_size=60)


def hostile_numbers() -> st.SearchStrategy[Any]:
    return st.sampled_from(HOSTILE_NUMBERS) | st.integers()


def wrong_values() -> st.SearchStrategy[Any]:
    return (
        st.integers(min_value=-(2**70), max_value=2**70)
        | st.floats()
        | st.booleans()
        | st.none()
        | st.lists(st.integers(), max_size=3)
        | st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)
        | st.text(max_size=10)
    )


Reads = list[Callable[[str, Any], dict[str, Any]]]
READS: dict[str, Reads] = {
    "base-memory": [
        lambda s, n: {"op": "search_memories", "query": s, "limit": n},
        lambda s, n: {"op": "search_memories", "query": s, "mode": s},
        lambda s, n: {"op": "search_memories", "query": s, "category": s},
        lambda s, n: {"op": "get_memory", "id": s},
        lambda s, n: {"op": "recent_memories", "limit": n},
        lambda s, n: {"op": "list_memories", "category": "fact", "limit": n},
        lambda s, n: {"op": "recent_memories", "offset": n},
        lambda s, n: {"op": "list_memories", "category": "fact", "offset": n},
        lambda s, n: {"op": "memory_stats"},
        lambda s, n: {"op": "search_memories", "query": "x", "space": s},
        lambda s, n: {"op": "recent_memories", "space": [s, s], "limit": n},
        lambda s, n: {"op": "get_memory", "id": s, "space": s},
        lambda s, n: {"op": "changes_since", "space": s, "after": n},
        lambda s, n: {"op": "space_info", "space": s},
        lambda s, n: {"op": "list_spaces"},
        lambda s, n: {"op": "memory_history", "id": s},
        lambda s, n: {"op": "memory_refs", "work_id": s, "limit": n},
        lambda s, n: {"op": "search_memories", "query": s, "tags_any": [s], "tags_all": [s]},
        lambda s, n: {"op": "recent_memories", "metadata_equals": {s: n}, "limit": n},
        lambda s, n: {"op": "list_memories", "category": "fact", "created_after": s},
        lambda s, n: {"op": "search_memories", "query": "x", "accessed_before": n},
    ],
    "interaction-memory": [
        lambda s, n: {"op": "get_information", "conversation_id": s},
        lambda s, n: {"op": "get_context_summary", "conversation_id": s},
        lambda s, n: {"op": "export_conversation", "conversation_id": s},
        lambda s, n: {"op": "get_working_memory", "session_id": s},
        lambda s, n: {"op": "recent_entities", "session_id": s, "limit": n},
        lambda s, n: {"op": "get_preferences", "user": s},
        lambda s, n: {"op": "search_context", "query": s, "limit": n},
        lambda s, n: {"op": "search_context", "query": s, "type": s},
        lambda s, n: {"op": "get_all_conversations"},
        lambda s, n: {"op": "get_working_memory", "session_id": "w", "space": s},
        lambda s, n: {"op": "search_context", "query": "x", "space": s, "limit": n},
    ],
    "beads-sync": [
        lambda s, n: {"op": "search_memories", "query": s, "limit": n},
        lambda s, n: {"op": "restore_session", "session_id": s},
        lambda s, n: {"op": "get_session_context", "session_id": s},
        lambda s, n: {"op": "retrieve_memories", "agent": s, "tags": [s], "limit": n},
        lambda s, n: {"op": "retrieve_memories", "memory_type": s, "session": s},
    ],
}
WRITES: dict[str, list[dict[str, Any]]] = {
    "base-memory": [
        {"op": "store_memory", "category": "fact", "content": "fuzz", "confidence": 0.5},
        {"op": "update_memory", "id": "seeded", "content": "fuzz"},
        {"op": "delete_memory", "id": "seeded"},
        {"op": "store_memory", "category": "fact", "content": "fuzz", "space": "fuzz-team"},
        {
            "op": "store_memory",
            "content": "fuzz",
            "tags": ["t"],
            "metadata": {"k": 1},
            "source": "docs/E2-241/PLAN.md",
            "ttl_seconds": 60,
        },
        {"op": "update_memory", "id": "seeded", "tags": ["t"], "expires_at": "2030-01-01T00:00Z"},
        {"op": "forget_memories", "tags_any": ["t"], "dry_run": False},
        {"op": "create_space", "name": "fuzz-team", "description": "fuzz"},
        {"op": "grant", "space": "fuzz-team", "member": "x@localhost", "role": "reader"},
        {"op": "revoke", "space": "fuzz-team", "member": "x@localhost"},
        {"op": "subscribe", "space": "fuzz-team"},
        {"op": "delete_space", "space": "fuzz-team"},
    ],
    "interaction-memory": [
        {"op": "add_information", "conversation_id": "c", "information": "fuzz"},
        {"op": "clear_conversation", "conversation_id": "c", "archive": False},
        {"op": "create_working_memory", "session_id": "w", "user_id": "u"},
        {"op": "update_context", "session_id": "w", "values": {"k": 1}},
        {"op": "save_preferences", "user": "u", "preferences": {"k": "v"}},
        {"op": "save_knowledge", "name": "k", "content": "fuzz", "tags": ["t"]},
        {"op": "end_conversation", "conversation_id": "c", "tags": [], "clear": False},
        {
            "op": "set_clarification",
            "session_id": "w",
            "space": "fuzz-team",
            "clarification": {"question": "fuzz?"},
        },
        {"op": "save_knowledge", "name": "k", "content": "fuzz", "space": "fuzz-team"},
    ],
    "beads-sync": [
        {"op": "store_memory", "content": "fuzz", "importance": 5, "tags": ["t"]},
        {"op": "delete_memory", "memory_id": "seeded"},
        {"op": "link_memories", "child": "seeded", "parent": "seeded"},
        {"op": "mark_memory_accessed", "memory_id": "seeded"},
        {"op": "share_session", "session": "s", "member": "x@localhost", "role": "writer"},
        {"op": "unshare_session", "session": "s", "member": "x@localhost"},
    ],
}
AGENTS = st.sampled_from(sorted(ADAPTERS))


@st.composite
def hostile_read(draw: st.DrawFn) -> tuple[str, str]:
    agent = draw(AGENTS)
    body = draw(st.sampled_from(READS[agent]))(draw(hostile_strings()), draw(hostile_numbers()))
    return agent, json.dumps(body)


def bad_write(agent: str) -> st.SearchStrategy[dict[str, Any]]:
    """A write the agent must refuse (a mutation that is still valid is not drawn)."""
    return mutated_write(agent).filter(lambda body: expectation(agent, json.dumps(body)) == "fail")


@st.composite
def mutated_write(draw: st.DrawFn, agent: str) -> dict[str, Any]:
    body = dict(draw(st.sampled_from(WRITES[agent])))
    fields = sorted(key for key in body if key != "op")
    how = draw(st.sampled_from(["wrong type", "missing", "extra", "owner", "oversized"]))
    if how == "wrong type":
        body[draw(st.sampled_from(fields))] = draw(wrong_values())
    elif how == "missing":
        del body[draw(st.sampled_from(fields))]
    elif how == "extra":
        body[draw(st.text(min_size=1, max_size=10).filter(lambda k: k not in body))] = 1
    elif how == "owner":
        body[draw(st.sampled_from(["owner", "agent_id"]))] = draw(
            st.sampled_from(["victim@localhost", "", "@@@", "x@localhost/res"])
        )
    else:
        field = next((f for f in ("content", "information", "name") if f in body), fields[0])
        too_long = st.integers(min_value=Limits.max_content_chars + 1, max_value=60_000)
        body[field] = "x" * draw(too_long)
    return body


@st.composite
def bad_request(draw: st.DrawFn) -> tuple[str, str]:
    kind = draw(st.sampled_from(["text", "truncated", "not an object", "unknown op",
                                 "deep", "write", "batch", "read", "read", "read"]))  # fmt: skip
    if kind == "read":
        return draw(hostile_read())
    agent = draw(AGENTS)
    if kind == "text":
        # An empty body is no <body> at all: SPADE's embedded server does not deliver it.
        return agent, NOT_XML.sub("", draw(st.text(max_size=200))) or "{"
    if kind == "truncated":
        whole = json.dumps(draw(st.sampled_from(WRITES[agent])))
        return agent, whole[: draw(st.integers(min_value=1, max_value=len(whole) - 1))]
    if kind == "not an object":
        value = draw(st.integers() | st.lists(st.integers()) | st.text(max_size=20) | st.none())
        return agent, json.dumps(value)
    if kind == "unknown op":
        op = draw(st.text(max_size=30).filter(lambda o: o not in ("batch",)))
        return agent, json.dumps({"op": op, "content": draw(hostile_strings())})
    if kind == "deep":
        depth = draw(st.integers(min_value=100, max_value=20_000))
        return agent, '{"op": "store_memory", "content": ' + "[" * depth + "]" * depth + "}"
    if kind == "write":
        return agent, json.dumps(draw(bad_write(agent)))
    items = draw(st.lists(bad_write(agent), min_size=1, max_size=5))
    return agent, json.dumps({"op": "batch", "ops": items})


def expectation(agent: str, body: str) -> str:
    """What the schemas say: ``fail`` (must be refused) or ``any`` (a valid read)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return "fail"
    if isinstance(data, dict) and data.get("op") == "batch":
        try:
            batch_op.validate_json(body)
        except ValidationError:
            return "fail"
        return "batch"
    try:
        op = ADAPTERS[agent].validate_json(body)
    except ValidationError:
        return "fail"
    if any(isinstance(v, str) and len(v) > Limits.max_content_chars for _k, v in op):
        return "fail"
    if getattr(op, "owner", None) is not None:
        return "fail"
    reads = {str(reader("", 1)["op"]) for reader in READS[agent]}
    return "any" if data.get("op") in reads else "write"


def snapshot(data_dir: Path) -> dict[str, Any]:
    """Everything stored, access statistics left out."""
    with sqlite3.connect(data_dir / "base-memory.db") as db:
        memories = db.execute(
            "SELECT id, owner, category, content, context, confidence FROM memories ORDER BY id"
        ).fetchall()
    with sqlite3.connect(data_dir / "interaction-memory.db") as db:
        notes = db.execute("SELECT * FROM notes ORDER BY 1, 2, 3").fetchall()
        working = db.execute("SELECT * FROM working_memories ORDER BY 1, 2").fetchall()
    index = data_dir / "context" / INDEX_FOLDER  # a cache of searches, not what is stored
    context = sorted(
        (str(p.relative_to(data_dir)), p.read_text())
        for p in (data_dir / "context").rglob("*")
        if p.is_file() and index not in p.parents
    )
    with sqlite3.connect(data_dir / "spaces.db") as db:
        spaces = [
            db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("spaces", "members", "subscriptions", "session_shares")
        ]
    beads = data_dir / "beads" / ".beads" / "issues.jsonl"
    return {
        "spaces": spaces,
        "memories": memories,
        "notes": notes,
        "working": working,
        "context": context,
        "beads": beads.read_text() if beads.exists() else "",
    }


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryServiceProcess]:
    service = MemoryServiceProcess(tmp_path_factory.mktemp("fuzzed"), "--beads-debounce", "0.2")
    service.start()
    yield service
    service.stop()


@pytest.fixture(scope="module")
async def fuzzer(fuzzed: MemoryServiceProcess) -> AsyncIterator[ClientAgent]:
    """The owner of the seeded memories: its hostile reads run over real data."""
    agent = await start_client(unique_jid("fuzzer"), fuzzed.port)
    memory = agent.memory
    for text in ("The deploy key rotates monthly", "secret * NEAR OR content:x", "a/../../b"):
        await memory.store_memory("fact", text, context="seed")
        await memory.add_information("c", text)
        await memory.beads.store_memory(text, "decision", tags=["seed"])
    await memory.session("w").create(user_id="u")
    await memory.session("w").update_context({"seeded": True})
    await memory.save_preferences("u", {"theme": "dark"})
    await memory.save_knowledge("seed", "knowledge seeded")
    await memory.end_conversation("c", summary="seeded")
    await memory.create_space("fuzz-team")  # so that hostile space reads meet a real space
    await memory.grant("fuzz-team", "x@localhost", "writer")
    team = memory.space("fuzz-team")
    await team.store_memory("fact", "The team's seeded memory")
    await team.session("w").update_context({"seeded": "team"})
    await team.save_knowledge("seed", "team knowledge seeded")
    await memory.beads.share_session("s", "x@localhost")
    beads = fuzzed.data_dir / "beads" / ".beads" / "issues.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the four base memories mirrored into beads
        if beads.exists() and beads.read_text().count("spade-memory:") >= 4:
            break
        await asyncio.sleep(0.2)
    await asyncio.sleep(1.0)  # nothing left to mirror
    yield agent
    await stop_agent(agent)


def check(agent: str, body: str, reply: Message, tally: Counter[str]) -> None:
    expected = expectation(agent, body)
    performative = reply.get_metadata("performative")
    tally[f"{expected} -> {performative}"] += 1
    where = f"{agent} {body[:300]!r} -> {performative} {reply.body[:300]!r}"
    if performative == "inform":
        assert expected in ("any", "batch"), where
        result = json.loads(reply.body)
        if expected == "batch":
            assert all(not item["ok"] for item in result["results"]), where
            conditions = {item["condition"] for item in result["results"]}
            assert conditions <= TYPED_FAILURES, where
        return
    assert performative in ("failure", "refuse"), where
    failure = Failure.model_validate_json(reply.body)
    assert failure.condition in TYPED_FAILURES, where
    assert expected != "write", where  # a valid write would have changed the store


async def fuzz(
    agent: ClientAgent, service: MemoryServiceProcess, examples: int
) -> Counter[str]:  # fmt: skip
    """Send ``examples`` x PER_EXAMPLE generated requests; the tally of outcomes."""
    loop = asyncio.get_running_loop()
    tally: Counter[str] = Counter()
    limiter = asyncio.Semaphore(16)

    async def one(target: str, body: str) -> None:
        async with limiter:
            reply = await send_raw(agent.memory, f"{target}@localhost", body)
        check(target, body, reply, tally)

    async def send_all(requests: list[tuple[str, str]]) -> None:
        sendable = [(t, b) for t, b in requests if expectation(t, b) != "write"]
        tally["valid writes not sent"] += len(requests) - len(sendable)
        await asyncio.gather(*(one(t, b) for t, b in sendable))

    @settings(
        max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(st.lists(bad_request(), min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
    def example(requests: list[tuple[str, str]]) -> None:
        asyncio.run_coroutine_threadsafe(send_all(requests), loop).result(timeout=300)

    await asyncio.to_thread(example)
    assert service.process is not None and service.process.poll() is None
    return tally


async def fuzz_and_compare(
    fuzzer: ClientAgent, fuzzed: MemoryServiceProcess, examples: int
) -> int:  # fmt: skip
    before = snapshot(fuzzed.data_dir)
    tally = await fuzz(fuzzer, fuzzed, examples)
    sent = sum(n for outcome, n in tally.items() if "->" in outcome)
    print(f"\nfuzz: {sent:,} requests sent; outcomes: {dict(sorted(tally.items()))}")
    assert snapshot(fuzzed.data_dir) == before
    still = await fuzzer.memory.search_memories("deploy key")
    assert [m.content for m in still] == ["The deploy key rotates monthly"]
    return sent


async def test_a_thousand_bad_requests(fuzzer: ClientAgent, fuzzed: MemoryServiceProcess) -> None:
    assert await fuzz_and_compare(fuzzer, fuzzed, 20) >= 900


@pytest.mark.slow
async def test_ten_thousand_bad_requests(fuzzer: ClientAgent, fuzzed: MemoryServiceProcess) -> None:
    assert await fuzz_and_compare(fuzzer, fuzzed, 210) >= 10_000
