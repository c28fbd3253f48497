"""The inspector's views in headless Chromium against the real app on loopback and a real SQLite
memory (graph, files and vectors on): the thread view (with every state of each slot), the user
view (core facts, memory items, graph facts and entities, the superseded Lisbon marked with the
interval it held), the next context for a typed question, and the forget dialog naming what the
cascade's plan counts; after the forget nothing of the user is on screen. Each view at 1280 and at
800 px wide, without a console error. The screenshots of ``docs/server.md`` are made here
(``COGMEM_DOCS_SCREENSHOTS=1``, see ``browser_helpers``)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_helpers import DOCS_IMAGES, chromium, serving, shot, watch_errors
from user_view_seed import config, seed

from cogitator_memory import unwrap
from cogitator_memory.runtime.memory import Memory

TOKEN = "an-inspector-user-view-token-0123"
WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 800, "height": 900}


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, Memory, dict[str, Any]]]:
    async with Memory(config(tmp_path)) as memory:
        seeded = await seed(memory)
        async with serving(memory, TOKEN) as url:
            yield url, memory, seeded


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with chromium() as launched:
        yield launched


def _expect() -> Any:
    return pytest.importorskip("playwright.async_api").expect


async def _open(browser: Any, url: str, viewport: dict[str, int]) -> tuple[Any, list[str]]:
    page = await browser.new_page(viewport=viewport)
    errors = watch_errors(page)
    await page.goto(f"{url}/?token={TOKEN}")
    await page.fill("#user", "ada")
    return page, errors


async def _no_sideways_scroll(page: Any, width: int) -> None:
    assert await page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280px", "800px"])
async def test_the_thread_view_shows_every_state_of_a_slot(
    served: tuple[str, Memory, dict[str, Any]], browser: Any, viewport: dict[str, int]
) -> None:
    expect = _expect()
    url, _, seeded = served
    page, errors = await _open(browser, url, viewport)
    await page.click("#filters button[type=submit]")
    await page.click(f"[data-thread='{seeded['thread']}']")
    await page.wait_for_selector(f"#entry-{seeded['ids'][0]}")
    await page.wait_for_selector(f"[data-item='{seeded['porto']}']")
    # As of now the slot holds Porto only; "include suggested and stale" shows what it replaced.
    assert await page.locator(f"[data-item='{seeded['lisbon']}']").count() == 0
    await page.check("#items-all")
    lisbon = page.locator(f"#items [data-state='{seeded['lisbon']}']")
    await expect(lisbon).to_have_class(re.compile(r"\bsuperseded\b"))
    await expect(lisbon.locator(".badge")).to_have_text("superseded")
    meta = await lisbon.locator(".meta").text_content() or ""
    assert "replaced by Porto" in meta and "→" in meta and "now" not in meta.split("·")[3]
    await expect(page.locator(f"#items [data-state='{seeded['porto']}'] .badge")).to_have_text("now")
    # The columns are wide enough to read at this width, and nothing scrolls sideways.
    threads = await page.locator("#threads-pane").bounding_box()
    thread = await page.locator("#thread-pane").bounding_box()
    memory_pane = await page.locator("#memory-pane").bounding_box()
    assert threads["width"] >= 150 and thread["width"] >= 400 and memory_pane["width"] >= 300
    await _no_sideways_scroll(page, viewport["width"])
    name = "thread-view" if viewport is WIDE else "thread-view-800"
    await shot(page, name, docs=True)
    assert errors == []


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["1280px", "800px"])
async def test_the_user_view_shows_beliefs_the_next_context_and_a_forget_that_takes_all(
    served: tuple[str, Memory, dict[str, Any]], browser: Any, viewport: dict[str, int]
) -> None:
    expect = _expect()
    url, memory, seeded = served
    page, errors = await _open(browser, url, viewport)
    await page.click("#show-user")
    await expect(page.locator("#user-title")).to_have_text("What memory believes about ada")
    # Core facts: city is Porto now, Lisbon before it, marked.
    city = page.locator("#core-facts [data-slot='city']")
    await expect(city.locator(".state.held .value")).to_have_text("now Porto")
    await expect(city.locator(".state.superseded .value")).to_have_text("superseded Lisbon")
    # Memory items: Porto with its quote, and the Lisbon it replaced with the interval it held.
    porto = page.locator(f"#user-items [data-state='{seeded['porto']}']")
    await expect(porto.locator(".quote")).to_have_text("“I moved to Porto last June”")
    lisbon = page.locator(f"#user-items [data-state='{seeded['lisbon']}']")
    await expect(lisbon.locator(".badge")).to_have_text("superseded")
    lisbon_meta = await lisbon.locator(".meta").text_content() or ""
    assert "replaced by Porto" in lisbon_meta and "held " in lisbon_meta
    assert "2024" in lisbon_meta and "2025" in lisbon_meta  # 1 Jan 2024 → 1 Jun 2025, in the page's locale
    # Graph facts, the relation, and the entities, with their quotes.
    await expect(page.locator("#graph-facts")).to_contain_text("Ada is allergic to peanuts")
    await expect(page.locator(f"#graph-facts [data-edge='{seeded['edge']}']")).to_contain_text("Maria —lives in→ Porto")
    await expect(page.locator(f"#entities [data-node='{seeded['maria']}'] .quote")).to_have_text(
        "“my sister Maria lives there”"
    )
    await expect(page.locator(f"#entities [data-node='{seeded['porto_node']}'] .about")).to_have_text(
        "memory items about it: Ada · lives in = Porto"
    )
    # The agent's shared memory shows, marked; Bob is nowhere.
    await expect(page.locator("#user-items [data-slot='Office · opens at'] .slot .badge")).to_have_text("shared")
    body = await page.locator("#user-view").text_content() or ""
    assert "Berlin" not in body and "cello" not in body
    # The next context for a typed question: what build_context sends, core facts in its system message.
    await page.fill("#context-q", "Where does Ada live?")
    await page.click("#context-form button")
    system = page.locator("#context-messages .message.system .text")
    await expect(system).to_contain_text("city: Porto")
    await expect(page.locator("#context-messages")).to_contain_text("I moved to Porto last June")
    if viewport is WIDE:
        # A quote opens its entry in the thread view.
        await _no_sideways_scroll(page, viewport["width"])
        await shot(page, "user-view", docs=True)
        await page.click(f"#user-items [data-state='{seeded['lisbon']}'] .quote")
        await page.wait_for_selector(f"#entry-{seeded['ids'][0]}.highlight")
        assert await page.locator("#user-view").is_hidden()
        await page.click("[data-view=user]")
        await expect(page.locator("#user-title")).to_have_text("What memory believes about ada")
    else:
        cards = await page.locator("#core-pane").bounding_box()
        assert cards["width"] >= 300
        await _no_sideways_scroll(page, viewport["width"])
        await shot(page, "user-view-800", docs=True)
    # Forget: the dialog names what the cascade's plan counts, and forgetting leaves nothing on screen.
    async with httpx.AsyncClient(base_url=url, headers={"authorization": f"Bearer {TOKEN}"}) as http:
        plan = (await http.post("/api/forget/preview", json={"user_id": "ada"})).json()
    await page.click("#user-view-forget")
    await page.wait_for_selector("#confirm[open]")
    shown = {
        kind: await page.locator(f"#confirm-list [data-plan={kind}] .count").text_content()
        for kind in ("threads", "entries", "items", "core_facts", "graph_nodes", "graph_edges", "vectors", "files")
    }
    assert shown == {
        "threads": "1",
        "entries": "4",
        "items": "2",
        "core_facts": "3",
        "graph_nodes": "3",
        "graph_edges": "1",
        "vectors": str(plan["counts"]["vectors"]),
        "files": "1",
    }
    await expect(page.locator("#confirm-list [data-plan=items]")).to_contain_text(
        "Ada · lives in = Lisbon (superseded)"
    )
    await expect(page.locator("#confirm-list [data-plan=recall_index]")).to_be_visible()
    await shot(page, "forget-plan" if viewport is WIDE else "forget-plan-800", docs=viewport is WIDE)
    await page.click("#confirm-go")
    await expect(page.locator("#status")).to_contain_text("Forgotten user ada: 1 threads, 4 entries")
    everything = await page.locator("body").text_content() or ""
    for trace in ("Lisbon", "Porto", "peanuts", "Maria", seeded["thread"], "allergic"):
        assert trace not in everything, trace
    # What is left is the agent's shared memory, which was never hers.
    await expect(page.locator("#user-items [data-slot]")).to_have_count(1)
    await expect(page.locator("#user-items [data-slot='Office · opens at']")).to_be_visible()
    await expect(page.locator("#core-facts")).to_have_text("No core facts.")
    await expect(page.locator("#entities")).to_have_text("No entities.")
    assert await page.locator("#context-q").input_value() == ""
    await page.click("[data-view=threads]")
    assert await page.locator("#items li").count() == 0 and await page.locator("#entries li").count() == 0
    assert unwrap(await memory.adapter.get_thread(seeded["thread"])) is None
    assert unwrap(await memory.adapter.get_thread(seeded["bob_thread"])) is not None
    if viewport is WIDE:
        await page.click("[data-view=user]")
        await shot(page, "user-forgotten", docs=True)
    assert errors == []


def test_server_md_shows_a_screenshot_of_each_view() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "server.md").read_text()
    shown = set(re.findall(r"\]\(images/(inspector-[\w-]+\.png)\)", text))
    views = {"thread-view", "thread-view-800", "user-view", "user-view-800", "forget-plan", "user-forgotten"}
    assert shown == {f"inspector-{v}.png" for v in views}
    for name in shown:
        image = DOCS_IMAGES / name
        assert image.exists() and image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
