"""The directory of spaces on both engines: a SQLite file and a PostgreSQL database.

Several memory agents read one directory, so a grant made through one is in force
on the next request through another; here that is two directories opened on one
location.
"""

from __future__ import annotations

import asyncio

import pytest

from spade_memory.protocol.errors import Conflict
from spade_memory.spaces.directory import SpaceDirectory
from tests.support.stores import Location, query

pytestmark = pytest.mark.asyncio


async def test_spaces_members_and_roles(location: Location) -> None:
    directory = await SpaceDirectory.open(location("spaces.db"))
    try:
        space = await directory.create("survey", "ana@d", "the survey team")
        assert await directory.create("survey", "ana@d", None) == space  # hers already
        with pytest.raises(Conflict):
            await directory.create("survey", "bob@d", None)
        await directory.grant(space, "bob@d", "reader", "ana@d")
        await directory.grant(space, "bob@d", "writer", "ana@d")  # replaces the role
        await directory.grant(space, "*@lab", "reader", "ana@d")
        assert await directory.role_of(space, "ana@d") == "owner"
        assert await directory.role_of(space, "bob@d") == "writer"
        assert await directory.role_of(space, "eve@lab") == "reader"  # through its domain
        assert await directory.role_of(space, "eve@elsewhere") is None
        assert await directory.members(space) == [
            ("ana@d", "owner"),
            ("*@lab", "reader"),
            ("bob@d", "writer"),
        ]
        assert [(s.name, role) for s, role in await directory.spaces_of("bob@d")] == [
            ("survey", "writer")
        ]
        assert await directory.domain_grants() == [("survey", "*@lab")]
        await directory.set_quota(space.id, 10, 2**40)  # a byte quota past 32 bits
        found = await directory.find("survey")
        assert found is not None
        assert (found.max_memories, found.max_bytes) == (10, 2**40)
        assert found.created_at == space.created_at  # kept to the microsecond
        assert await directory.revoke(space, "bob@d")
        assert not await directory.revoke(space, "bob@d")
        assert await directory.role_of(space, "bob@d") is None
    finally:
        await directory.close()


async def test_subscriptions_shares_and_delete(location: Location) -> None:
    directory = await SpaceDirectory.open(location("spaces.db"))
    try:
        space = await directory.create("team", "ana@d", None)
        await directory.grant(space, "bob@d", "reader", "ana@d")
        await directory.subscribe(space, "bob@d", "bob@d/one")
        await directory.subscribe(space, "bob@d", "bob@d/two")  # its new connection
        assert await directory.subscribers(space.id) == [("bob@d", "bob@d/two")]
        await directory.revoke(space, "bob@d")  # takes the subscription too
        assert await directory.subscribers(space.id) == []

        await directory.share_session("ana@d", "s1", "bob@d", "reader")
        await directory.share_session("ana@d", "s1", "bob@d", "admin")
        await directory.share_session("ana@d", "s1", "*@d", "writer")
        shared = await directory.shared_with("bob@d")
        assert [(s.owner, s.session, s.role) for s in shared] == [("ana@d", "s1", "admin")]
        await directory.unshare_session("ana@d", "s1", "bob@d")
        shared = await directory.shared_with("bob@d")
        assert [(s.owner, s.session, s.role) for s in shared] == [("ana@d", "s1", "writer")]

        await directory.grant(space, "carl@d", "writer", "ana@d")
        await directory.delete(space.id)
        assert await directory.find("team") is None
        assert await directory.by_ids([space.id]) == {}
        assert await query(location("spaces.db"), "SELECT * FROM members") == []
    finally:
        await directory.close()


async def test_two_agents_share_one_directory(location: Location) -> None:
    """A grant made through one directory is read at once through the other, and two
    agents creating one name at once make one space."""
    first = await SpaceDirectory.open(location("spaces.db"))
    second = await SpaceDirectory.open(location("spaces.db"))
    try:
        made = await asyncio.gather(
            first.create("race", "ana@d", None), second.create("race", "ana@d", None)
        )
        assert made[0] == made[1]
        assert await query(location("spaces.db"), "SELECT count(*) FROM spaces") == [(1,)]
        await first.grant(made[0], "bob@d", "reader", "ana@d")
        assert await second.role_of(made[0], "bob@d") == "reader"
        outcomes = await asyncio.gather(
            first.create("taken", "ana@d", None),
            second.create("taken", "bob@d", None),
            return_exceptions=True,
        )
        assert sum(isinstance(outcome, Conflict) for outcome in outcomes) == 1
    finally:
        await first.close()
        await second.close()
