"""Fair serving in this process (``serving.fairness`` and the serving behaviour's queue,
not started): senders taken in turn, a sender's share of ops, the waiting room made
fairer when full, and answers drained at a sender's rate. What the wire shows (a memory
service in its own process, flooded) is ``wire/test_fairness.py``'s."""

from __future__ import annotations

import asyncio
import json

from spade_memory.protocol.limits import Limits
from spade_memory.protocol.memories import SearchMemories, base_memory_ops
from spade_memory.serving.agent import OutOfService, ServeRequests
from spade_memory.serving.fairness import AnswerRate, FairQueue
from spade_memory.xmpp import wire


def test_senders_are_taken_in_turn_each_in_its_own_order() -> None:
    waiting: FairQueue[str] = FairQueue()
    for n in range(4):
        waiting.put("flood", f"f{n}")
    waiting.put("bystander", "b0")
    waiting.put("other", "o0")
    waiting.put("bystander", "b1")
    taken = [waiting.take() for _ in range(len(waiting))]
    assert taken == ["f0", "b0", "o0", "f1", "b1", "f2", "f3"]
    assert waiting.take() is None and len(waiting) == 0


def test_the_longest_queue_gives_up_its_newest_item() -> None:
    waiting: FairQueue[str] = FairQueue()
    for item in ("a0", "a1", "a2", "b0", "b1"):
        waiting.put(item[0], item)
    assert waiting.longest() == ("a", 3) and waiting.count("b") == 2
    assert waiting.drop_newest("a") == "a2"
    assert waiting.longest() == ("a", 2)  # the first in turn among equals
    assert [waiting.take() for _ in range(len(waiting))] == ["a0", "b0", "a1", "b1"]
    assert waiting.longest() is None


def test_a_sender_that_may_not_start_is_passed_over_and_keeps_its_turn() -> None:
    waiting: FairQueue[str] = FairQueue()
    for item in ("a0", "a1", "b0", "c0"):
        waiting.put(item[0], item)
    assert waiting.take(lambda sender, _item: sender != "a") == "b0"
    assert waiting.take(lambda _sender, _item: False) is None and len(waiting) == 3
    assert [waiting.take() for _ in range(3)] == ["a0", "c0", "a1"]  # a first: its turn


async def test_one_senders_batches_are_served_a_share_of_ops_at_a_time() -> None:
    """Three batches of 20 reads and a bystander's search, with 16 requests served at
    once: the flooder's second batch would pass ``max_sender_ops`` (32), so it waits and
    the bystander is served beside the first; a batch larger than the share is served
    alone rather than never."""
    serving = _serving(Limits())
    reads = [{"op": "recent_memories"}] * 20
    for n in range(3):
        batch = _request("flooder", n)
        batch.body = json.dumps({"op": "batch", "ops": reads})
        await serving._admit(batch)
    await serving._admit(_request("bystander", 0))
    huge = _request("huge", 0)
    huge.body = json.dumps({"op": "batch", "ops": [{"op": "recent_memories"}] * 40})
    await serving._admit(huge)
    serving._start_waiting()  # the tasks are made, not run: what is being served
    try:
        assert serving.working == 3
        assert dict(serving.ops_served) == {
            "flooder@localhost": 20, "bystander@localhost": 1, "huge@localhost": 40
        }  # fmt: skip
        assert serving.waiting.count("flooder@localhost") == 2
    finally:
        await _end_tasks(serving)


def test_a_senders_answers_drain_at_its_rate_with_a_seconds_worth_at_once() -> None:
    now = [0.0]
    rate = AnswerRate(1000, clock=lambda: now[0])
    rate.charge("reader", 900)
    assert rate.wait("reader") == 0  # under a second's worth: served at once
    rate.charge("reader", 2100)
    assert rate.owed("reader") == 3000 and rate.wait("reader") == 2.0
    now[0] = 1.5
    assert rate.owed("reader") == 1500 and rate.wait("reader") == 0.5
    now[0] = 2.0
    assert rate.wait("reader") == 0 and rate.wait("someone else") == 0
    unlimited = AnswerRate(0)
    unlimited.charge("reader", 10**12)
    assert unlimited.wait("reader") == 0


async def test_a_sender_answered_past_its_rate_waits_while_others_are_served() -> None:
    """The large-read flood of issue 75: a sender answered three seconds' worth lately
    waits (its request is not refused) while a bystander's is served at once, and is
    served when what it owes has drained to a second's worth, woken by a timer."""
    serving = _serving(Limits(sender_answer_rate=1000))
    now = [0.0]
    serving.answer_rate = AnswerRate(1000, clock=lambda: now[0])
    serving.answer_rate.charge("reader@localhost", 3000)
    await serving._admit(_request("reader", 0))
    await serving._admit(_request("bystander", 0))
    serving._start_waiting()  # the tasks are made, not run: what is being served
    try:
        assert dict(serving.ops_served) == {"bystander@localhost": 1} and not serving._refusals
        assert serving.waiting.count("reader@localhost") == 1
        assert serving._wake is not None  # after the 2 s it owes past a second's worth
        assert 1.5 < serving._wake.when() - asyncio.get_running_loop().time() <= 2.0
        now[0] = 2.0
        timer = serving._wake
        timer._run()  # the timer's own call, without waiting two seconds for it
        timer.cancel()
        assert serving._wake is None
        assert dict(serving.ops_served) == {"bystander@localhost": 1, "reader@localhost": 1}
        assert len(serving.waiting) == 0
    finally:
        if serving._wake is not None:
            serving._wake.cancel()
        await _end_tasks(serving)


async def test_a_full_room_makes_room_for_a_sender_under_its_share() -> None:
    """Many accounts fill the waiting room; a newcomer with fewer waiting than the
    longest still gets in, and the longest gives up its newest (refused, retry_after)."""
    serving = _serving(Limits(max_waiting=8, max_in_flight=32))
    for n in range(4):  # not started: what is admitted waits
        for flooder in ("f1", "f2"):
            await serving._admit(_request(flooder, n))
    assert len(serving.waiting) == 8 and not serving._refusals
    await serving._admit(_request("f1", 4))  # one more of the same: refused, as before
    await serving._admit(_request("bystander", 0))  # under its share: admitted
    await serving._admit(_request("f3", 0))
    refused = [(r.to, json.loads(r.body)["condition"]) for r in serving._refusals]
    assert refused == [
        ("f1@localhost/r", "resource-constraint"),  # its fifth
        ("f1@localhost/r", "resource-constraint"),  # its newest, for the bystander
        ("f2@localhost/r", "resource-constraint"),  # its newest, for f3
    ]
    assert serving.waiting.count("bystander@localhost") == 1
    assert serving.waiting.count("f3@localhost") == 1
    assert dict(serving.in_flight) == {
        "f1@localhost": 3, "f2@localhost": 3, "bystander@localhost": 1, "f3@localhost": 1
    }  # fmt: skip
    await serving._admit(_request("bystander", 1))  # 1 against the longest's 3: in
    assert (
        serving._refusals[-1].to == "f1@localhost/r" and serving.waiting.count("f1@localhost") == 2
    )
    await serving._admit(_request("bystander", 2))  # 2 against 3: no fairer, refused
    assert serving._refusals[-1].to == "bystander@localhost/r"
    assert serving.waiting.count("bystander@localhost") == 2


def _serving(limits: Limits) -> ServeRequests:
    """The base memory's serving behaviour under ``limits``, not started."""
    return ServeRequests(
        OutOfService("base-memory", base_memory_ops, limits, "not served"), "localhost"
    )


def _request(sender: str, n: int) -> wire.Message:
    request = wire.request_message("memory@localhost", SearchMemories(query="q"), f"{sender}-{n}")
    request.sender = f"{sender}@localhost/r"
    return request


async def _end_tasks(serving: ServeRequests) -> None:
    """Cancel the serving tasks ``_start_waiting`` made (never run) and await them."""
    for task in serving._tasks:
        task.cancel()
    await asyncio.gather(*serving._tasks, return_exceptions=True)
