"""The web view over HTTP: logins checked by the XMPP server, sessions, CSRF, the pages
made of memory ops as the viewer's account, refusals, bad input, and live changes.
The view is served here; the memory agents run in another process (``spade-memory
run``), and agents of this process change what the view shows."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from spade_memory.protocol.errors import ItemNotFound
from spade_memory.protocol.memories import GetMemory
from spade_memory.protocol.working_memory import Finding, Focus
from spade_memory.testing import MemoryServiceProcess, free_port
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, start_client, unique_jid
from tests.support.web_clients import browser, csrf_of, log_in, page, web_view

WAIT = 60.0


async def test_without_a_session_every_page_is_the_login_page(
    memory_service: MemoryServiceProcess,
) -> None:
    async with web_view(memory_service.port) as base, browser() as session:
        for path in ("/", "/spaces/personal", "/spaces/team/memories/x", "/spade", "/nothing"):
            status, _ = await page(session, base + path)
            assert status == 303, path
        async with session.get(f"{base}/spaces/team/events",
                               headers={"Accept": "text/event-stream"}) as events:  # fmt: skip
            assert events.status == 401
        async with session.post(f"{base}/logout", data={"csrf": "x"}) as posted:
            assert posted.status == 401
        status, login = await page(session, f"{base}/login")
        assert status == 200 and 'name="password"' in login


async def test_a_login_is_checked_by_the_xmpp_server(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    async with web_view(memory_service.port) as base, browser() as session:
        refused = await log_in(session, base, str(alice.jid.bare), "not-the-password")
        assert refused.status == 401
        status, _ = await page(session, f"{base}/")
        assert status == 303
        nobody = unique_jid("nobody")
        for _ in range(2):  # a login never makes the account
            assert (await log_in(session, base, nobody, "anything")).status == 401
        elsewhere = await log_in(session, base, "alice@example.org", "client-secret")
        assert elsewhere.status == 401
        status, home = await page(session, f"{base}/")
        assert status == 303

        answer = await log_in(session, base, str(alice.jid.bare))
        assert (answer.status, answer.headers["Location"]) == (303, "/")
        cookie = answer.cookies["spade_memory_view"]
        assert cookie["httponly"] and cookie["samesite"] == "Strict" and not cookie["secure"]
        status, home = await page(session, f"{base}/")
        assert status == 200 and str(alice.jid.bare) in home


async def test_the_login_form_needs_its_own_token(memory_service: MemoryServiceProcess,
                                                  alice: ClientAgent) -> None:  # fmt: skip
    async with web_view(memory_service.port) as base, browser() as session:
        await page(session, f"{base}/login")
        data = {"jid": str(alice.jid.bare), "password": "client-secret", "csrf": "forged"}
        async with session.post(f"{base}/login", data=data, allow_redirects=False) as answer:
            assert answer.status == 403
            assert "token" in await answer.text()
        assert (await page(session, f"{base}/"))[0] == 303


async def test_a_viewer_sees_its_spaces_and_what_they_hold(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    await alice.memory.create_space("web-team", "The team's decisions")
    await alice.memory.grant("web-team", str(bob.jid.bare), "reader")
    await alice.memory.store_memory("fact", "The deploy window is Tuesday", space="web-team",
                                    tags=["deploy"])  # fmt: skip
    await alice.memory.store_memory("preference", "Alice's own secret")
    async with web_view(memory_service.port) as base, browser() as session:
        await log_in(session, base, str(bob.jid.bare))
        _, home = await page(session, f"{base}/")
        assert "web-team" in home and "reader" in home
        status, team = await page(session, f"{base}/spaces/web-team")
        assert status == 200
        assert "The deploy window is Tuesday" in team and str(alice.jid.bare) in team
        assert "You are reader here" in team and "2 members" in team
        _, searched = await page(session, f"{base}/spaces/web-team?q=deploy+window")
        assert "score " in searched and "Ranked by" in searched
        _, tagged = await page(session, f"{base}/spaces/web-team?tag=nothing")
        assert "No memories" in tagged
        _, by_bob = await page(session, f"{base}/spaces/web-team?author={bob.jid.bare}")
        assert "No memories" in by_bob
        _, by_alice = await page(session, f"{base}/spaces/web-team?author={alice.jid.bare}")
        assert "The deploy window is Tuesday" in by_alice
        assert f'data-list="/spaces/web-team?author={alice.jid.bare}' in by_alice.replace(
            "%40", "@"
        )  # the live list keeps the filter
        _, own = await page(session, f"{base}/spaces/personal")
        assert "secret" not in own
        (found,) = await alice.memory.search_memories("secret")
        status, _ = await page(session, f"{base}/spaces/personal/memories/{found.id}")
        assert status == 404  # alice's memory is not bob's
        status, _ = await page(session, f"{base}/spaces/alice-private")
        assert status == 404


async def test_a_pages_figures_are_its_spaces_own_and_read_as_a_person_reads_them(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    await alice.memory.create_space("web-figures")
    for n in range(2):
        await alice.memory.store_memory("fact", f"Team fact {n}", space="web-figures")
    await alice.memory.store_memory("preference", "Alice likes figures")
    async with web_view(memory_service.port) as base, browser() as session:
        await log_in(session, base, str(alice.jid.bare))
        _, own = await page(session, f"{base}/spaces/personal")
        _, team = await page(session, f"{base}/spaces/web-figures")
    mine = await alice.memory.get_memory_stats()
    assert mine is not None and mine.used_memories == 3 and mine.total_memories == 1
    # the personal space holds one; the quota counts all three alice stored
    assert "1 memory here now." in own and own.count('class="memory"') == 1
    assert "Your quota, for what you store in every space:" in own
    assert "3 of 1,000,000 memories," in own and f"{mine.used_bytes} B of 1 GiB." in own
    assert "2 memories here now." in team and "This space's quota:" in team
    assert "2 of 1,000,000 memories," in team
    assert "1073741824" not in own + team and "1,073,741,824" not in own + team
    # the memories before the activity, drawn a line each
    assert team.index('id="memories"') < team.index('id="activity"')
    activity = team[team.index('id="activity"') :]
    assert "2 stored in the last 14 days" in activity and activity.count("<rect") == 14 + 1


async def test_a_writer_edits_a_reader_is_refused_and_a_forged_token_changes_nothing(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    carol = await start_client(unique_jid("carol"), memory_service.port)
    await stop_agent(carol)  # its account stays; it logs in through the view
    await alice.memory.create_space("web-edits")
    await alice.memory.grant("web-edits", str(bob.jid.bare), "writer")
    await alice.memory.grant("web-edits", str(carol.jid.bare), "reader")
    memory_id = await bob.memory.store_memory("fact", "Staging is on port 8443", space="web-edits")
    url_of = f"/spaces/web-edits/memories/{memory_id}"
    async with web_view(memory_service.port) as base:
        async with browser() as writer:
            await log_in(writer, base, str(bob.jid.bare))
            _, shown = await page(writer, base + url_of)
            assert 'name="content"' in shown
            token = csrf_of(shown)
            forged = {"csrf": "x" + token, "content": "Staging is on port 1"}
            async with writer.post(base + url_of, data=forged, allow_redirects=False) as answer:
                assert answer.status == 403
            edit = {"csrf": token, "content": "Staging is on port 9443", "category": "fact"}
            async with writer.post(base + url_of, data=edit, allow_redirects=False) as answer:
                assert answer.status == 303
            _, shown = await page(writer, base + url_of)
            assert "History" in shown and "port 8443" in shown and "port 9443" in shown
            newer = await bob.memory.supersede_memory(
                memory_id, "Staging is on port 7443", space="web-edits"
            )
            _, shown = await page(writer, base + url_of)
            assert "No longer current" in shown and "/restore" in shown
            undo = {"csrf": csrf_of(shown)}
            async with writer.post(base + url_of + "/restore", data=undo,
                                   allow_redirects=False) as answer:  # fmt: skip
                assert answer.status == 303
            _, shown = await page(writer, base + url_of)
            assert "No longer current" not in shown
            both = await alice.memory.search_memories("Staging", space="web-edits")
            assert newer is not None
            assert {m.id for m in both} == {memory_id, newer.id}  # current, beside its successor
        async with browser() as reader:
            await log_in(reader, base, str(carol.jid.bare))
            _, shown = await page(reader, base + url_of)
            assert 'name="content"' not in shown  # no form for a reader
            data = {"csrf": csrf_of(shown), "content": "Staging is gone"}
            async with reader.post(base + url_of, data=data, allow_redirects=False) as answer:
                assert answer.status == 403
                assert "not-authorized" in await answer.text()
            async with reader.post(base + url_of + "/delete", data={"csrf": csrf_of(shown)},
                                   allow_redirects=False) as answer:  # fmt: skip
                assert answer.status == 403
            async with reader.post(base + url_of + "/restore", data={"csrf": csrf_of(shown)},
                                   allow_redirects=False) as answer:  # fmt: skip
                assert answer.status == 403
    kept = await alice.memory.get_memory(memory_id, space="web-edits")
    assert kept is not None and kept.content == "Staging is on port 9443"


async def test_bad_input_gets_a_clear_answer_and_changes_nothing(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    await alice.memory.create_space("web-bad")
    script = "<script>alert('x')</script><b>bold</b>"
    memory_id = await alice.memory.store_memory("fact", script, space="web-bad")
    async with web_view(memory_service.port) as base, browser() as session:
        await log_in(session, base, str(alice.jid.bare))
        status, listed = await page(session, f"{base}/spaces/web-bad")
        assert status == 200
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in listed
        assert "<script>alert" not in listed and "<b>bold" not in listed
        status, long_search = await page(session, f"{base}/spaces/web-bad?q={'a' * 10_000}")
        assert status == 200 and "No memories match this search" in long_search
        wrong = [("page=99999999", "page is"), ("page=abc", "page is"),
                 ("category=secret", "category is"), ("after=yesterday", "after is")]  # fmt: skip
        for query, said in wrong:
            status, text = await page(session, f"{base}/spaces/web-bad?{query}")
            assert (status, said in text) == (400, True), query
        for path in ("/static/../pyproject.toml", "/static/%2e%2e/app.py",
                     "/spaces/..%2F..%2Fetc/memories/x", "/spaces/%00"):  # fmt: skip
            status, text = await page(session, base + path)
            assert status in (400, 403, 404), path
            assert "Traceback" not in text and "[project]" not in text
        status, text = await page(session, f"{base}/spade")
        assert status == 404  # SPADE's own pages are not on this port
    kept = await alice.memory.get_memory(memory_id, space="web-bad")
    assert kept is not None and kept.content == script


async def test_a_session_expires_and_a_logout_ends_it(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    async with web_view(memory_service.port, idle=1.0) as base, browser() as session:
        await log_in(session, base, str(alice.jid.bare))
        assert (await page(session, f"{base}/"))[0] == 200
        await asyncio.sleep(1.5)  # longer than the idle time: expired however slow
        assert (await page(session, f"{base}/"))[0] == 303
    async with web_view(memory_service.port) as base, browser() as session:
        await log_in(session, base, str(alice.jid.bare))
        _, home = await page(session, f"{base}/")
        async with session.post(f"{base}/logout", data={"csrf": csrf_of(home)},
                                allow_redirects=False) as answer:  # fmt: skip
            assert answer.status == 303
        assert (await page(session, f"{base}/"))[0] == 303


async def test_a_space_page_hears_the_spaces_changes(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    """The events a space's page listens to: one per store, update and delete of any
    member, and none of a space the viewer does not read."""
    await alice.memory.create_space("web-live")
    await alice.memory.grant("web-live", str(bob.jid.bare), "reader")
    async with web_view(memory_service.port) as base, browser() as session:
        await log_in(session, base, str(bob.jid.bare))
        headers = {"Accept": "text/event-stream"}
        async with session.get(f"{base}/spaces/web-live/events", headers=headers) as events:
            assert events.status == 200
            assert await asyncio.wait_for(events.content.readline(), WAIT) == b": listening\n"
            memory_id = await alice.memory.store_memory("fact", "Live from alice", space="web-live")
            await alice.memory.update_memory(memory_id, space="web-live", content="Live, again")
            await alice.memory.delete_memory(memory_id, space="web-live")
            heard = [await _event(events) for _ in range(3)]
        assert [(e["kind"], e["id"], e["by"]) for e in heard] == [
            (kind, memory_id, str(alice.jid.bare)) for kind in ("stored", "updated", "deleted")
        ]
        async with session.get(f"{base}/spaces/not-bobs/events", headers=headers) as refused:
            assert refused.status == 404


async def _event(events: object) -> dict[str, str]:
    content = events.content  # type: ignore[attr-defined]
    while True:
        line = await asyncio.wait_for(content.readline(), WAIT)
        if line.startswith(b"data: "):
            return json.loads(line[6:])  # type: ignore[no-any-return]


def test_cookies_are_secure_beyond_this_machine() -> None:
    from spade_memory.http.address import HttpAddress
    from spade_memory.server.web_command import view
    from spade_memory.web.guard import SECURE_COOKIES
    from spade_memory.web.viewers import Deployment

    served = view(Deployment(), HttpAddress("0.0.0.0", 1))
    assert served._runner.app[SECURE_COOKIES] is True
    assert view(Deployment(), HttpAddress("127.0.0.1", 1))._runner.app[SECURE_COOKIES] is False


async def test_run_serves_the_view_and_its_metrics_beside_the_agents(tmp_path: Path) -> None:
    """``spade-memory run --web``: the banner names the view, which answers on the port
    and exports the agents' figures at ``/metrics`` to a scraper with the token; a second
    view on that port is refused in one line."""
    web_port, token = free_port(), "scrape-secret"
    service = MemoryServiceProcess(
        tmp_path / "data", "--web", f"127.0.0.1:{web_port}",
        env={"SPADE_MEMORY_METRICS_TOKEN": token},
    )  # fmt: skip
    await asyncio.to_thread(service.start, 120.0)
    base = f"http://127.0.0.1:{web_port}"
    try:
        assert f"{base}/" in "".join(service.output)
        agent = await start_client(unique_jid("scraped"), service.port)
        try:
            await agent.memory.store_memory("fact", "Counted once")
            assert await agent.memory.delete_memory("no-such-memory") is False
        finally:
            await stop_agent(agent)
        async with browser() as session:
            status, login = await page(session, f"{base}/login")
            assert status == 200 and 'name="password"' in login
            for given in (None, "Bearer wrong", token):
                headers = {} if given is None else {"Authorization": given}
                async with session.get(f"{base}/metrics", headers=headers) as answer:
                    assert answer.status == 401
            bearer = {"Authorization": f"Bearer {token}"}
            async with session.get(f"{base}/metrics", headers=bearer) as answer:
                assert answer.status == 200
                assert answer.headers["Content-Type"].startswith("text/plain")
                figures = await answer.text()
        for line in (
            'spade_memory_requests_total{op="store_memory",outcome="ok",service="base-memory"}',
            'spade_memory_requests_total{op="delete_memory",outcome="item-not-found",'
            'service="base-memory"} 1.0',
            'spade_memory_request_seconds_count{op="store_memory",service="base-memory"}',
            'spade_memory_waiting_requests{service="base-memory"} 0.0',
            'spade_memory_requests_in_progress{service="interaction-memory"}',
            'spade_memory_background_pending{work="change_notices"} 0.0',
            'spade_memory_refusals_total{service="base-memory"}',
        ):
            assert line in figures, line
        quota_line = 'spade_memory_quota_use_ratio{kind="memories"}'
        (quota,) = [line for line in figures.splitlines() if line.startswith(quota_line)]
        assert float(quota.split()[-1]) == 1 / 1_000_000  # one memory of the default quota
        busy = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "spade_memory", "web", "--http", str(web_port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert busy.returncode == 1
        assert busy.stderr.strip().splitlines() == [
            f"spade-memory web: cannot listen at 127.0.0.1:{web_port}: Address already in use"
        ]
    finally:
        await asyncio.to_thread(service.stop)


async def test_metrics_are_off_without_a_token(memory_service: MemoryServiceProcess) -> None:
    async with (
        web_view(memory_service.port) as base,
        browser() as session,
        session.get(f"{base}/metrics") as answer,
    ):
        assert answer.status == 404
        assert "SPADE_MEMORY_METRICS_TOKEN" in await answer.text()


async def test_an_admin_grants_and_revokes_through_the_view(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    carol = unique_jid("carol")
    await alice.memory.create_space("web-admin")
    await alice.memory.grant("web-admin", str(bob.jid.bare), "writer")
    async with web_view(memory_service.port) as base:
        async with browser() as admin:
            await log_in(admin, base, str(alice.jid.bare))
            _, shown = await page(admin, f"{base}/spaces/web-admin")
            assert 'action="/spaces/web-admin/members"' in shown
            token = csrf_of(shown)
            for role in ("reader", "none"):
                data = {"csrf": token, "member": carol, "role": role}
                async with admin.post(f"{base}/spaces/web-admin/members", data=data,
                                      allow_redirects=False) as answer:  # fmt: skip
                    assert answer.status == 303
                details = await alice.memory.space_info("web-admin")
                assert details is not None
                roles = {m.member: m.role for m in details.members}
                assert roles.get(carol) == (None if role == "none" else role)
            bad = {"csrf": token, "member": carol, "role": "owner"}
            async with admin.post(f"{base}/spaces/web-admin/members", data=bad) as answer:
                assert answer.status == 400
        async with browser() as writer:
            await log_in(writer, base, str(bob.jid.bare))
            _, shown = await page(writer, f"{base}/spaces/web-admin")
            assert 'action="/spaces/web-admin/members"' not in shown
            data = {"csrf": csrf_of(shown), "member": carol, "role": "admin"}
            async with writer.post(f"{base}/spaces/web-admin/members", data=data) as answer:
                assert answer.status == 403
    details = await alice.memory.space_info("web-admin")
    assert details is not None and carol not in {m.member for m in details.members}


async def test_a_working_session_of_a_space(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    await alice.memory.create_space("web-sessions")
    await alice.memory.grant("web-sessions", str(bob.jid.bare), "reader")
    session = alice.memory.session("pr/7", space="web-sessions")
    await session.set_focus(Focus(type="file", id="app/db.py", name="db.py"))
    await session.add_finding(Finding(type="bug", title="<b>N+1</b> query", severity="warning"))
    await alice.memory.session("<i>pr 8</i>", space="web-sessions").create()
    async with web_view(memory_service.port) as base, browser() as viewer:
        await log_in(viewer, base, str(bob.jid.bare))
        _, listed = await page(viewer, f"{base}/spaces/web-sessions")
        # the space's sessions listed by id, each a link, its focus and counts said
        assert (
            'href="/spaces/web-sessions/sessions/%3Ci%3Epr%208%3C%2Fi%3E">&lt;i&gt;pr 8' in listed
        )
        assert 'href="/spaces/web-sessions/sessions/pr%2F7">pr/7</a>' in listed
        assert f"of {alice.jid.bare}, started" in listed and ", on db.py;" in listed
        assert "0 entities, 1 finding" in listed and "No working session here yet" not in listed
        _, own = await page(viewer, f"{base}/spaces/personal")
        assert "No working session here yet" in own  # bob's own: none
        async with viewer.get(f"{base}/spaces/web-sessions/sessions?id=pr/7",
                              allow_redirects=False) as opened:  # fmt: skip
            assert opened.headers["Location"] == "/spaces/web-sessions/sessions/pr%2F7"
        status, shown = await page(viewer, f"{base}/spaces/web-sessions/sessions/pr%2F7")
        assert status == 200
        assert "db.py" in shown and "&lt;b&gt;N+1&lt;/b&gt; query" in shown and "warning" in shown
        status, _ = await page(viewer, f"{base}/spaces/web-sessions/sessions/nothing")
        assert status == 404


async def test_the_charts_count_what_the_space_holds_and_a_look_is_not_a_use(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    await alice.memory.create_space("web-charts")
    await alice.memory.grant("web-charts", str(bob.jid.bare), "writer")
    for n in range(3):
        await alice.memory.store_memory("fact", f"Alice's fact number {n}", space="web-charts")
    bobs = await bob.memory.store_memory("fact", "Bob's only fact", space="web-charts")
    async with web_view(memory_service.port) as base, browser() as viewer:
        await log_in(viewer, base, str(alice.jid.bare))
        _, shown = await page(viewer, f"{base}/spaces/web-charts")
        label = f"Stored per author, last 14 days: {alice.jid.bare} 3, {bob.jid.bare} 1"
        assert label in shown and "4 stored in the last 14 days" in shown
        members = shown[shown.index('<ul class="members">') : shown.index("</ul>")]
        # who wrote what, member by member, beside each one's role
        assert f'{alice.jid.bare}</span> <span class="role">owner' in members
        assert f'{bob.jid.bare}</span> <span class="role">writer' in members
        assert members.count("3 stored in 14 days") == 1 and "1 stored in 14 days" in members
        assert "No search from this view in the last hour" in shown
        await page(viewer, f"{base}/spaces/web-charts?q=fact")
        await page(viewer, f"{base}/spaces/web-charts/memories/{bobs}")
        _, shown = await page(viewer, f"{base}/spaces/web-charts")
        assert "This view's searches, last hour: 1, p50" in shown
    unused = GetMemory(id=str(bobs), space="web-charts", count_access=False)
    kept = await bob.memory.request(bob.memory.base_memory_jid, unused)
    assert kept is not None and kept.access_count == 0  # looking at it was not a use


async def test_a_memorys_beads_issue_to_those_who_read_the_space(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent
) -> None:
    await alice.memory.create_space("web-beads")
    await alice.memory.grant("web-beads", str(bob.jid.bare), "reader")
    memory_id = await alice.memory.store_memory(
        "fact", "The mirror keeps this", space="web-beads", tags=["mirrored"]
    )
    issue = None
    deadline = asyncio.get_running_loop().time() + WAIT
    while issue is None:  # the mirror writes after its debounce
        try:
            issue = await bob.memory.beads.mirrored_memory(str(memory_id))
        except ItemNotFound:
            assert asyncio.get_running_loop().time() < deadline, "never mirrored"
            await asyncio.sleep(0.5)
    assert issue.base_memory_id == memory_id and "space:web-beads" in issue.labels
    stranger = await start_client(unique_jid("stranger"), memory_service.port)
    try:
        with pytest.raises(ItemNotFound):
            await stranger.memory.beads.mirrored_memory(str(memory_id))
    finally:
        await stop_agent(stranger)
    async with web_view(memory_service.port) as base, browser() as viewer:
        await log_in(viewer, base, str(bob.jid.bare))
        status, shown = await page(viewer, f"{base}/spaces/web-beads/memories/{memory_id}/beads")
        assert status == 200
        assert f"Beads issue {issue.id}" in shown and "space:web-beads" in shown
        assert "mirrored" in shown
        status, _ = await page(viewer, f"{base}/spaces/web-beads/memories/nothing/beads")
        assert status == 404


async def test_a_superseded_memory_shows_as_it_was_and_links_its_successor(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    old = await alice.memory.store("fact", "The build host is ci1.example.")
    new = await alice.memory.store("fact", "The build host is ci2.example.")
    assert old is not None and new is not None and new.supersedes == old.id
    async with web_view(memory_service.port) as base, browser() as viewer:
        await log_in(viewer, base, str(alice.jid.bare))
        status, shown = await page(viewer, f"{base}/spaces/personal/memories/{old.id}")
        assert status == 200 and "ci1.example" in shown
        assert f'No longer current: replaced by <a href="/spaces/personal/memories/{new.id}">' in (
            shown
        )
        status, shown = await page(viewer, f"{base}/spaces/personal/memories/{new.id}")
        assert status == 200 and f'href="/spaces/personal/memories/{old.id}"' in shown
        assert "No longer current" not in shown
        _, listed = await page(viewer, f"{base}/spaces/personal")
        assert "ci2.example" in listed and "ci1.example" not in listed


async def test_a_facts_timeline_and_a_memorys_neighbourhood_are_drawn(
    memory_service: MemoryServiceProcess, alice: ClientAgent
) -> None:
    values = [await alice.memory.store("fact", f"The staging port is {port}.")
              for port in (8443, 9443, 10443)]  # fmt: skip
    first, middle, last = (stored.id for stored in values if stored is not None)
    assert values[2] is not None and values[2].supersedes == middle
    seed = await alice.memory.store_memory("fact", "Jon opened a dance studio in Brooklyn.")
    near = await alice.memory.store_memory("fact", "The studio in Brooklyn needs a new floor.")
    async with web_view(memory_service.port) as base, browser() as viewer:
        await log_in(viewer, base, str(alice.jid.bare))
        _, shown = await page(viewer, f"{base}/spaces/personal/memories/{middle}")
        drawn = shown[shown.index('id="timeline"') :]
        # every value, oldest first; the page's own strong, the others links
        at = [drawn.index(text) for text in ("port is 8443", "port is 9443", "port is 10443")]
        assert at == sorted(at) and drawn.count("<li") == 3
        assert f'href="/spaces/personal/memories/{first}">The staging port is 8443.</a>' in drawn
        assert "<strong>The staging port is 9443.</strong>" in drawn
        assert f'href="/spaces/personal/memories/{last}">The staging port is 10443.</a>' in drawn
        assert drawn.count("replaced by the next") == 2 and drawn.count("until now") == 2
        assert drawn.count('class="now"') == 1 and drawn.count('class="was"') == 2
        assert f"stated by {alice.jid.bare}" in drawn
        assert 'id="neighbourhood"' not in shown  # not current: the graph links current ones
        _, lone = await page(viewer, f"{base}/spaces/personal/memories/{seed}")
        assert 'id="timeline"' not in lone  # one value: nothing over time
        graph = lone[lone.index('id="neighbourhood"') :]
        assert 'aria-label="It names Brooklyn, studio,' in graph and ">Jon<" in graph
        assert f'<a href="/spaces/personal/memories/{near}"><text' in graph
        assert graph.count("<line") == 2  # brooklyn and studio lead to it
