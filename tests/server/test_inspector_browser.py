"""The inspector page in headless Chromium (Debian's package) against the real app on loopback and
a real SQLite memory, asking for a token as ``serve`` does: the token taken from the URL, the tree,
items linked to their quotes, file diffs, search, stored markup shown as text and never run, and
clicks that really forget.

Chromium, the server and screenshots: see ``browser_helpers``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from browser_helpers import chromium, serving, shot, watch_errors

from cogitator_memory import unwrap
from cogitator_memory.runtime.memory import Memory

SCRIPT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
TOKEN = "an-inspector-test-token-0123456789"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, Memory]]:
    config = {
        "adapter": "sqlite",
        "path": str(tmp_path / "memory.db"),
        "embedding": {"provider": "hashing"},
        "files": {"enabled": True},
    }
    async with Memory(config) as memory, serving(memory, TOKEN) as url:
        yield url, memory


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with chromium() as launched:
        yield launched


async def _seed(memory: Memory) -> dict[str, Any]:
    store = memory.adapter
    thread = unwrap(await store.create_thread("default", {"user_id": "ada", "title": "Ada's chat"}))
    texts = ["My sister Maria lives in Porto", "Noted.", SCRIPT, "That looks like code.", "My pin is 4321", "Ok."]
    ids = []
    for i, text in enumerate(texts):
        role = "user" if i % 2 == 0 else "assistant"
        ids.append(
            unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": role, "content": text}})).id
        )
    scope = {"agent_id": "default", "user_id": "ada"}
    item = await memory.items.add(
        {
            "kind": "fact",
            "subject": "Maria",
            "attribute": "lives in",
            "value": "Porto",
            "evidence": [{"entry_id": ids[0], "thread_id": thread.id, "quote": "Maria lives in Porto"}],
            "trust": "user",
            "verified": True,
            "scope": scope,
        }
    )
    assert memory.files is not None
    await memory.files.put({"scope": scope, "author": "user"}, "/memories/ada.md", "likes: tea\n")
    await memory.files.put({"scope": scope, "author": "user"}, "/memories/ada.md", f"likes: tea\nnote: {SCRIPT}\n")
    side = {
        "thread_id": thread.id,
        "parent_id": ids[1],
        "activate": False,
        "message": {"role": "user", "content": "Or Braga?"},
    }
    branch = unwrap(await store.add_entry(side)).id
    summary = {
        "thread_id": thread.id,
        "type": "compaction",
        "event": {"summary": "Ada's sister lives in Porto.", "first_kept_entry_id": ids[4]},
    }
    compaction = unwrap(await store.add_entry(summary)).id
    fork = unwrap(await store.fork_thread(thread.id, ids[1])).id
    other = unwrap(await store.create_thread("default", {"user_id": "bob"}))
    unwrap(await store.add_entry({"thread_id": other.id, "message": {"role": "user", "content": "Bob stays"}}))
    return {
        "thread": thread.id,
        "ids": ids,
        "item": item.id,
        "other": other.id,
        "branch": branch,
        "compaction": compaction,
        "fork": fork,
    }


async def test_the_inspector_shows_and_forgets(served: tuple[str, Memory], browser: Any) -> None:
    url, memory = served
    seeded = await _seed(memory)
    page = await browser.new_page()
    errors = watch_errors(page)
    await page.goto(f"{url}/?token={TOKEN}")
    await page.fill("#user", "ada")
    await page.click("#filters button[type=submit]")
    await page.wait_for_selector(f"[data-thread='{seeded['thread']}']")
    assert await page.locator("#threads li").count() == 2  # hers and its fork; not Bob's
    await page.click(f"[data-thread='{seeded['thread']}']")
    await page.wait_for_selector(f"#entry-{seeded['ids'][-1]}")
    assert await page.locator("#entries > li").count() == 8
    # Compactions and forks.
    summary_text = await page.locator(f"#entry-{seeded['compaction']}.compaction .text").text_content()
    assert summary_text == f"Summary (stands for the entries before {seeded['ids'][4]}): Ada's sister lives in Porto."
    assert f"forks: {seeded['fork']}" in (await page.locator("#thread-meta").text_content() or "")
    # The tree: the side branch is marked off the active path, its parent as a branch point.
    assert await page.locator(f"#entry-{seeded['branch']}.off-path .side").text_content() == "other branch"
    assert (
        await page.locator(f"#entry-{seeded['ids'][1]}.branch .branches").text_content() == "branch point: 2 branches"
    )
    assert await page.locator(f"#entry-{seeded['compaction']}.active").count() == 1
    # Stored markup is shown as text and never runs.
    script_row = page.locator(f"#entry-{seeded['ids'][2]} .text")
    assert await script_row.text_content() == SCRIPT
    assert await page.evaluate("window.__pwned") is None
    assert await page.locator("#entries img").count() == 0
    # The item, its quote linked to the entry it stands on.
    await page.wait_for_selector(f"[data-item='{seeded['item']}']")
    await page.click(f"[data-item='{seeded['item']}'] .quote")
    await page.wait_for_selector(f"#entry-{seeded['ids'][0]}.highlight")
    await shot(page, "thread-and-items")
    # File versions with their diff, the markup in it as text.
    await page.click("[data-tab=files]")
    await page.click("[data-path='/memories/ada.md']")
    await page.wait_for_selector("#versions .diff")
    diffs = await page.locator("#versions .diff").all_text_contents()
    assert any("+note: <script>" in d for d in diffs)
    assert await page.evaluate("window.__pwned") is None
    await shot(page, "file-versions")
    # Search.
    await page.fill("#search", "where does Maria live")
    await page.click("#search-form button")
    await page.wait_for_selector(f"[data-hit='{seeded['ids'][0]}']")
    # Forget one entry: the preview lists it, the click really deletes it (and its reply).
    await page.click(f"[data-forget='{seeded['ids'][4]}']")
    await page.wait_for_selector("#confirm[open]")
    assert "entries of" in (await page.locator("#confirm-list").text_content() or "")
    await shot(page, "forget-preview")
    await page.click("#confirm-go")
    await page.wait_for_selector(f"#entry-{seeded['ids'][4]}", state="detached")
    assert unwrap(await memory.adapter.get_entry(seeded["ids"][4])) is None
    assert unwrap(await memory.adapter.get_entry(seeded["ids"][0])) is not None
    # Keep it: cancelling the preview changes nothing.
    await page.click(f"[data-forget='{seeded['ids'][0]}']")
    await page.wait_for_selector("#confirm[open]")
    await page.click("#confirm-cancel")
    assert unwrap(await memory.adapter.get_entry(seeded["ids"][0])) is not None
    # Forget the user: every thread of Ada goes, Bob's stays.
    await page.click("#forget-user")
    await page.wait_for_selector("#confirm[open]")
    await page.click("#confirm-go")
    await page.wait_for_selector(f"[data-thread='{seeded['thread']}']", state="detached")
    # Nothing read before the forget stays on screen: not the thread, not her items.
    assert await page.locator("#items li").count() == 0 and await page.locator("#entries li").count() == 0
    assert "Maria" not in (await page.locator("body").text_content() or "")
    await shot(page, "user-forgotten")
    assert unwrap(await memory.adapter.get_thread(seeded["thread"])) is None
    assert unwrap(await memory.adapter.get_thread(seeded["other"])) is not None
    assert errors == []


async def test_a_large_thread_is_read_a_page_at_a_time(served: tuple[str, Memory], browser: Any) -> None:
    expect = pytest.importorskip("playwright.async_api").expect
    url, memory = served
    store = memory.adapter
    thread = unwrap(await store.create_thread("default", {"user_id": "cy"}))
    for i in range(250):
        unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"turn {i}"}}))
    page = await browser.new_page()
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    await page.goto(f"{url}/?token={TOKEN}")
    await page.fill("#user", "cy")
    await page.click("#filters button[type=submit]")
    await page.click(f"[data-thread='{thread.id}']")
    await page.wait_for_selector("#entries > li")
    assert await page.locator("#entries > li").count() == 100
    assert await page.locator("#entries > li").first.text_content() is not None
    await page.click("#entries-more")
    await expect(page.locator("#entries > li")).to_have_count(200)
    await page.click("#entries-more")
    await expect(page.locator("#entries > li")).to_have_count(250)
    assert await page.locator("#entries-more").is_hidden()
    texts = await page.locator("#entries .text").all_text_contents()
    assert texts == [f"turn {i}" for i in reversed(range(250))]
    assert sum("/entries" in u for u in asked) == 3


async def test_the_page_takes_the_token_from_its_url_and_keeps_it(served: tuple[str, Memory], browser: Any) -> None:
    """``/?token=...`` (what ``serve`` prints): the token leaves the address bar at once, is sent
    as a header with every request (never in a URL) and kept for the tab; without it the page
    says where the token is and takes one typed in."""
    url, memory = served
    thread = unwrap(await memory.adapter.create_thread("default", {"user_id": "dee"}))
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    sent: list[tuple[str, str | None]] = []
    page.on("request", lambda request: sent.append((request.url, request.headers.get("authorization"))))
    await page.goto(f"{url}/?token={TOKEN}")
    await page.wait_for_selector(f"[data-thread='{thread.id}']")
    assert page.url == f"{url}/"
    api_calls = [(u, auth) for u, auth in sent if "/api/" in u]
    assert api_calls and all(auth == f"Bearer {TOKEN}" and "token" not in u for u, auth in api_calls)
    # A reload keeps the token for the tab.
    await page.reload()
    await page.wait_for_selector(f"[data-thread='{thread.id}']")
    # Another tab without the token: refused, told where the token is, and a typed one works.
    other = await browser.new_page()
    await other.goto(f"{url}/")
    await other.wait_for_selector("#token-box:not([hidden])")
    assert "token" in (await other.locator("#status").text_content() or "")
    assert await other.locator(f"[data-thread='{thread.id}']").count() == 0
    await other.fill("#token", "a-wrong-token-of-enough-length")
    await other.click("#token-save")
    await other.wait_for_selector("#token-box:not([hidden])")
    await other.fill("#token", TOKEN)
    await other.click("#token-save")
    await other.wait_for_selector(f"[data-thread='{thread.id}']")
    assert errors == []
