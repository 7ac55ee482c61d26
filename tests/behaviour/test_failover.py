"""The client's pool of agents serving one service (``failover.AgentPool``): requests
go to each agent in turn, a silent one is passed over until it answers again, and a
request that went to any agent of the pool goes on in the pool; a deployment can name
the pool in the environment. Over the wire, with
agents killed, in ``test_postgres_e2e``."""

from __future__ import annotations

import pytest
from spade.agent import Agent

from spade_memory import MemoryClient
from spade_memory.client.failover import (
    BASE_POOL_ENV,
    INTERACTION_POOL_ENV,
    AgentPool,
    pool_from_environment,
)
from spade_memory.client.xmpp_transport import XmppTransport

A, B, C = "a@d", "b@d", "c@d"


def test_requests_go_to_each_agent_in_turn() -> None:
    pool = AgentPool([A, B, C, A])  # a JID given twice is one agent
    assert pool.jids == (A, B, C)
    firsts = [pool.order()[0] for _ in range(6)]
    assert firsts == [A, B, C, A, B, C]
    assert sorted(pool.order()) == [A, B, C]  # every agent, to fail over to


def test_a_silent_agent_is_tried_last_until_it_answers() -> None:
    pool = AgentPool([A, B, C])
    pool.silent(B)
    orders = [pool.order() for _ in range(3)]
    assert all(order[-1] == B for order in orders)
    pool.answered(B)
    assert [pool.order()[0] for _ in range(3)] == [A, B, C]


def test_an_empty_pool_is_refused() -> None:
    with pytest.raises(ValueError):
        AgentPool([])


async def test_any_agent_of_a_pool_names_the_whole_pool() -> None:
    transport = XmppTransport(Agent("client@d", "secret"), {"base-memory": [A, B], "other": C})
    assert transport.jids == {"base-memory": A, "other": C}
    assert transport.agents(A) == transport.agents(B) == (A, B)
    assert transport.agents(f"{B}/resource") == (A, B)
    assert transport.agents(C) == (C,)


async def test_a_deployment_names_the_pools_in_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert pool_from_environment(BASE_POOL_ENV, {BASE_POOL_ENV: f" {A},{B}  {C}, "}) == [A, B, C]
    assert pool_from_environment(BASE_POOL_ENV, {BASE_POOL_ENV: " , "}) is None
    assert pool_from_environment(BASE_POOL_ENV, {}) is None
    monkeypatch.setenv(BASE_POOL_ENV, f"{A} {B}")
    monkeypatch.setenv(INTERACTION_POOL_ENV, C)
    pooled = MemoryClient(Agent("client@d", "secret"))
    assert pooled.transport.agents(A) == (A, B)
    assert pooled.jids["interaction-memory"] == C
    named = MemoryClient(Agent("client@d", "secret"), C, interaction_memory_jid=A)
    assert named.jids["base-memory"] == C and named.transport.agents(C) == (C,)  # code wins
    assert named.jids["interaction-memory"] == A
    monkeypatch.delenv(BASE_POOL_ENV)
    assert MemoryClient(Agent("client@d", "secret")).jids["base-memory"] == "base-memory@d"
