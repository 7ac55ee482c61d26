"""The web view in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
driven by selenium; nothing downloads a browser): log in, open a space, search, watch
a memory stored by an agent in another OS process appear without a reload, edit as a
writer, be refused as a reader, a forged token, escaped content, a phone-sized window,
the keyboard alone, and the figures a page states against the store's. The memory
agents run in another OS process (``spade-memory run``), the view in a third
(``spade-memory web``) and the storing agent in a fourth (``spade-memory memories
add``); this process drives the browser.

``SPADE_MEMORY_WEB_SCREENSHOT=FILE`` keeps the screenshot the test takes (the
documentation's).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spade_memory.protocol.memories import MemoryStats
from spade_memory.testing import ChildProcess, MemoryServiceProcess, free_port
from spade_memory.web.figures import count, size
from spade_memory.xmpp.lifecycle import stop_agent
from tests.support.harness import ClientAgent, start_client, unique_jid
from tests.support.web_clients import PASSWORD

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
MISSING = (
    "Chromium is not installed; `apt-get install chromium-driver` (Debian/Ubuntu, with"
    " chromium) runs the browser tests (CI installs it)"
)
WAIT = 60.0
"""Seconds a test waits for what it expects: a loaded machine is slow, not wrong."""

pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None, reason=MISSING)


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    assert CHROMIUM is not None and CHROMEDRIVER is not None
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-sync",
                 "--disable-component-update", "--disable-dev-shm-usage",
                 f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1100,800"):  # fmt: skip
        options.add_argument(flag)
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium's manager downloads nothing
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def web_command(memory_service: MemoryServiceProcess) -> Iterator[str]:
    """``spade-memory web`` in its own process, for the deployment; yields its URL."""
    port = free_port()
    process = ChildProcess(
        [sys.executable, "-m", "spade_memory", "web", "--http", str(port), "--port",
         str(memory_service.port)],
        "serving http://127.0.0.1",
    )  # fmt: skip
    process.start(timeout=WAIT)
    yield f"http://127.0.0.1:{port}"
    process.stop()
    assert process.process is None


def _store_from_another_process(port: int, jid: str, space: str, content: str) -> None:
    """An agent of its own OS process stores a memory (the shell's ``memories add``)."""
    subprocess.run(
        [sys.executable, "-m", "spade_memory", "memories", "add", "--jid", jid, "--port",
         str(port), "--space", space, "--category", "fact", content],
        env={**os.environ, "SPADE_MEMORY_AGENT_PASSWORD": PASSWORD},
        check=True, capture_output=True, timeout=WAIT,
    )  # fmt: skip


async def test_a_writer_and_a_reader_in_a_real_browser(
    memory_service: MemoryServiceProcess, alice: ClientAgent, bob: ClientAgent,
    chromium: object, web_command: str,
) -> None:  # fmt: skip
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    driver: object = chromium
    d = driver  # type: ignore[assignment]
    carol = await start_client(unique_jid("carol"), memory_service.port)
    await stop_agent(carol)
    space = "browser-team"
    await alice.memory.create_space(space, "What the team decided")
    await alice.memory.grant(space, str(bob.jid.bare), "writer")
    await alice.memory.grant(space, str(carol.jid.bare), "reader")
    deploy = await bob.memory.store_memory(
        "fact", "The deploy window is Tuesday 10:00 UTC", space=space
    )
    hostile = '<img src=x onerror="window.pwned=1"> <script>window.pwned=2</script>'
    await alice.memory.store_memory("fact", hostile, space=space)

    def until(condition: object) -> object:
        try:
            # a live page may replace an element between finding and reading it
            return WebDriverWait(
                d, WAIT, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,)
            ).until(condition)
        except Exception:
            print(d.current_url, d.title, d.page_source[:3000])  # what the browser shows
            raise

    base = web_command
    # no credentials: the login page, whatever was asked for
    d.get(f"{base}/spaces/{space}")
    assert d.title.startswith("Log in")

    # log in with the keyboard alone
    d.find_element(By.ID, "jid").send_keys(str(bob.jid.bare), Keys.TAB, PASSWORD, Keys.ENTER)
    until(lambda _: d.title.startswith("Spaces"))
    d.find_element(By.LINK_TEXT, space).click()
    until(lambda _: d.title.startswith(space))
    texts = [e.text for e in d.find_elements(By.CSS_SELECTOR, ".memory .content")]
    assert "The deploy window is Tuesday 10:00 UTC" in texts

    # content is text, never markup
    assert hostile in texts
    assert d.find_elements(By.CSS_SELECTOR, "#memories img, #memories script") == []
    assert d.execute_script("return window.pwned === undefined")

    # live: a memory stored by an agent in another process appears without a reload
    until(lambda _: "Live" in d.find_element(By.ID, "live-status").text)
    d.execute_script("window.stayed = true")
    started = time.monotonic()
    _store_from_another_process(memory_service.port, str(alice.jid.bare), space,
                                "Staging moved to port 9443")  # fmt: skip
    stored_at = time.monotonic()
    until(lambda _: "Staging moved to port 9443" in d.find_element(By.ID, "memories").text)
    shown_after = time.monotonic() - stored_at
    assert d.execute_script("return window.stayed === true"), "the page was reloaded"
    took = time.monotonic() - started
    print(f"shown {shown_after:.3f}s after the store returned ({took:.1f}s in all)")

    # search, with scores
    search = d.find_element(By.ID, "q")
    search.send_keys("deploy window", Keys.ENTER)
    until(lambda _: "Ranked by" in d.find_element(By.ID, "memories").text)
    assert "score" in d.find_element(By.CSS_SELECTOR, ".memory .score").text

    shot = os.environ.get("SPADE_MEMORY_WEB_SCREENSHOT")
    if shot:  # the whole page, its activity under the memories included
        _whole_page_shot(d, shot)

    # edit as a writer: the history shows both versions
    d.find_element(By.PARTIAL_LINK_TEXT, "The deploy window").click()
    until(lambda _: d.find_elements(By.ID, "content"))
    content = d.find_element(By.ID, "content")
    content.clear()
    content.send_keys("The deploy window is Wednesday 10:00 UTC")
    d.find_element(By.CSS_SELECTOR, "form.edit button").click()
    until(lambda _: "History" in d.page_source)
    assert "Wednesday" in d.find_element(By.CSS_SELECTOR, "blockquote.content").text
    memory_page = d.current_url

    # a forged token is refused, and changes nothing
    status = _post_from_page(d, memory_page, {"csrf": "forged", "content": "Forged"})
    assert status == 403

    # a phone-sized window: nothing wider than the screen
    d.set_window_size(390, 844)
    d.get(f"{base}/spaces/{space}")
    assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    # there the memories come first: the first one within the first screen, the
    # filters folded, and no filter's label broken over two lines once unfolded
    first = "return document.querySelector('#memories .memory').getBoundingClientRect().top"
    assert d.execute_script(first) < d.execute_script("return window.innerHeight")
    d.find_element(By.CSS_SELECTOR, "form.filters details.more summary").click()
    heights = d.execute_script(
        "return [...document.querySelectorAll('form.filters label')]"
        ".map((label) => label.getBoundingClientRect().height)"
    )
    assert len(heights) == 6 and max(heights) < 1.5 * min(heights), heights
    assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")

    # the figures are the store's, as a person reads them: the space's count and quota
    # as the base memory agent reports them, and as many memories listed as it says;
    # the personal page counts the personal space alone (not the account's every space)
    _shows_the_stores_figures(d, await bob.memory.get_memory_stats(space=space), 3)
    await bob.memory.store_memory("preference", "Bob reads the release notes first")
    d.get(f"{base}/spaces/personal")
    _shows_the_stores_figures(d, await bob.memory.get_memory_stats(), 1)

    # a fact's timeline and a memory's neighbourhood, read and followed by keyboard on
    # the phone: nothing wider than the screen, the drawing's links reached with Tab
    train = await bob.memory.store_memory("fact", "The release train leaves Brooklyn on Friday",
                                          space=space)  # fmt: skip
    later = await bob.memory.supersede_memory(
        str(train), "The release train leaves Brooklyn on Monday", space=space
    )
    assert later is not None
    linked = await bob.memory.store_memory("fact", "Brooklyn has the release party", space=space)
    d.get(f"{base}/spaces/{space}/memories/{later.id}")
    spans = d.find_elements(By.CSS_SELECTOR, "figure.timeline li > :is(a, strong)")
    assert [span.text for span in spans] == [
        "The release train leaves Brooklyn on Friday",
        "The release train leaves Brooklyn on Monday",
    ]
    assert d.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    if shot:  # the memory's page as a phone shows it
        _whole_page_shot(d, shot.replace(".png", "-memory.png"))
    for _ in range(40):  # Tab until the neighbourhood's link has the focus
        d.switch_to.active_element.send_keys(Keys.TAB)
        if d.execute_script("return !!document.activeElement.closest('figure.neighbourhood')"):
            break
    else:
        raise AssertionError("the neighbourhood's links are not reached with the keyboard")
    d.switch_to.active_element.send_keys(Keys.ENTER)
    until(lambda _: d.current_url.endswith(f"/memories/{linked}"))

    # a reader sees no form, and its POST is refused by the memory agent
    d.delete_all_cookies()
    d.get(f"{base}/login")
    d.find_element(By.ID, "jid").send_keys(str(carol.jid.bare), Keys.TAB, PASSWORD, Keys.ENTER)
    until(lambda _: d.title.startswith("Spaces"))
    d.get(memory_page)
    assert d.find_elements(By.CSS_SELECTOR, "form.edit") == []
    token = d.find_element(By.CSS_SELECTOR, "form.logout input[name=csrf]").get_attribute("value")
    status = _post_from_page(d, memory_page, {"csrf": token, "content": "Reader was here"})
    assert status == 403

    kept = await alice.memory.get_memory(str(deploy), space=space)
    assert kept is not None and kept.content == "The deploy window is Wednesday 10:00 UTC"


def _shows_the_stores_figures(driver: object, stats: MemoryStats | None, held: int) -> None:
    """The open space page says it holds ``held`` memories, as ``stats`` (the store's)
    does, lists that many, and states the quota's figures ``stats`` gives."""
    from selenium.webdriver.common.by import By

    d: Any = driver
    assert stats is not None and stats.total_memories == held
    said = d.find_element(By.XPATH, "//p[contains(., 'here now')]").text
    assert f" {count(held)} {'memory' if held == 1 else 'memories'} here now" in said, said
    assert len(d.find_elements(By.CSS_SELECTOR, "#memories .memory")) == held
    quota = d.find_element(By.CSS_SELECTOR, "p.quota").text
    memories = count(stats.used_memories) + (
        f" of {count(stats.max_memories)}" if stats.max_memories else ""
    )
    size_used = size(stats.used_bytes) + (f" of {size(stats.max_bytes)}" if stats.max_bytes else "")
    assert f"{memories} memories, {size_used}." in quota, quota


def _whole_page_shot(driver: object, path: str) -> None:
    """A screenshot of the whole page (the window made as tall as it), the window's size
    kept."""
    d: Any = driver
    size = d.get_window_size()
    tall = d.execute_script("return document.documentElement.scrollHeight")
    d.set_window_size(size["width"], tall + size["height"] - d.execute_script(
        "return window.innerHeight"))  # fmt: skip
    d.save_screenshot(path)
    d.set_window_size(size["width"], size["height"])


def _post_from_page(driver: object, url: str, form: dict[str, str]) -> int:
    """POST ``form`` from the page, as a script of the page would; returns the status."""
    return int(driver.execute_async_script(  # type: ignore[attr-defined]
        "const [url, form, done] = arguments;"
        "fetch(url, {method: 'POST', body: new URLSearchParams(form), redirect: 'manual'})"
        ".then(r => done(r.status), () => done(0));",
        url, form,
    ))  # fmt: skip
