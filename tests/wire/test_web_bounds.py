"""What one account or one browser can make the web view hold: sessions, live streams,
login attempts; and the requests it does not answer (another Host, a malformed name).
Logins are real XMPP logins to ``spade-memory run`` in another process."""

from __future__ import annotations

import asyncio

from spade_memory.testing import MemoryServiceProcess
from tests.support.harness import ClientAgent
from tests.support.web_clients import browser, csrf_of, log_in, page, web_view

WAIT = 60.0
EVENTS = {"Accept": "text/event-stream"}


async def test_failed_logins_are_slowed_per_account_even_when_sent_at_once(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    jid = str(alice.jid.bare)
    async with web_view(memory_service.port, first_wait=60.0) as base, browser() as session:
        guesses = [log_in(session, base, jid, f"guess-{n}") for n in range(20)]
        statuses = sorted(answer.status for answer in await asyncio.gather(*guesses))
        assert statuses == [401] * 5 + [429] * 15  # five reached the XMPP server
        right = await log_in(session, base, jid)  # the right password waits too
        assert right.status == 429 and 50 <= int(right.headers["Retry-After"]) <= 60
        assert "try again in" in await right.text()
    # what the waits are, and that a login after one works: tests/behaviour/test_throttle.py


async def test_an_account_keeps_a_bounded_number_of_sessions(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    async with web_view(memory_service.port, sessions_per_account=2, max_sessions=3) as base:
        browsers = [browser() for _ in range(4)]
        try:
            for session in browsers[:3]:
                assert (await log_in(session, base, str(alice.jid.bare))).status == 303
            homes = [(await page(session, f"{base}/"))[0] for session in browsers[:3]]
            assert homes == [303, 200, 200]  # the oldest session of alice ended
            assert (await log_in(browsers[3], base, str(bob.jid.bare))).status == 303
            refused = await log_in(browsers[0], base, str(alice.jid.bare))  # 3 sessions open
            assert refused.status == 401
            homes = [(await page(session, f"{base}/"))[0] for session in browsers]
            assert homes == [303, 200, 200, 200]
        finally:
            for session in browsers:
                await session.close()


async def test_the_view_refuses_a_login_beyond_its_sessions(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    async with web_view(memory_service.port, max_sessions=1) as base, browser() as one:
        assert (await log_in(one, base, str(alice.jid.bare))).status == 303
        async with browser() as two:
            assert (await log_in(two, base, str(bob.jid.bare))).status == 401
            assert (await page(two, f"{base}/"))[0] == 303
        assert (await page(one, f"{base}/"))[0] == 200  # alice's session is untouched


async def test_live_streams_are_bounded_and_end_with_the_session(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    await alice.memory.create_space("web-streams")
    events_of = "/spaces/web-streams/events"
    async with web_view(memory_service.port, streams_per_session=1) as base, browser() as session:
        await log_in(session, base, str(alice.jid.bare))
        async with session.get(f"{base}{events_of}", headers=EVENTS) as events:
            assert await asyncio.wait_for(events.content.readline(), WAIT) == b": listening\n"
            async with session.get(f"{base}{events_of}", headers=EVENTS) as second:
                assert second.status == 429
            _, home = await page(session, f"{base}/")
            async with session.post(f"{base}/logout", data={"csrf": csrf_of(home)},
                                    allow_redirects=False) as answer:  # fmt: skip
                assert answer.status == 303
            rest = await asyncio.wait_for(events.content.read(), WAIT)  # the stream ends
        assert rest.endswith(b"event: end\ndata: {}\n\n")


async def test_a_stream_ends_once_its_space_is_no_longer_readable(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    await alice.memory.create_space("web-revoked")
    await alice.memory.grant("web-revoked", str(bob.jid.bare), "reader")
    async with web_view(memory_service.port, keepalive=0.5) as base, browser() as session:
        await log_in(session, base, str(bob.jid.bare))
        async with session.get(f"{base}/spaces/web-revoked/events", headers=EVENTS) as events:
            assert await asyncio.wait_for(events.content.readline(), WAIT) == b": listening\n"
            await alice.memory.revoke("web-revoked", str(bob.jid.bare))
            rest = await asyncio.wait_for(events.content.read(), WAIT)
        assert rest.endswith(b"event: end\ndata: {}\n\n")


async def test_another_host_name_and_a_malformed_account_get_one_line(
    memory_service: MemoryServiceProcess,
) -> None:
    async with web_view(memory_service.port) as base, browser() as session:
        async with session.get(f"{base}/login", headers={"Host": "attacker.example"}) as other:
            assert other.status == 421
        for given in ("a@b@localhost", "al\u0000ice", "x" * 4000):
            answer = await log_in(session, base, given, "anything")
            assert answer.status == 401
        status, login = await page(session, f"{base}/login")
        assert status == 200 and "Traceback" not in login
