"""What the inspector's browser tests share: the real app served by uvicorn on loopback, headless
Chromium (Debian's package) driven by playwright, and screenshots.

Chromium is found at ``$COGMEM_TEST_CHROMIUM`` (default ``/usr/bin/chromium``); screenshots go to
``$COGMEM_TEST_ARTIFACTS`` (default ``test-artifacts/``) under ``inspector/``, and, with
``COGMEM_DOCS_SCREENSHOTS=1``, those of the docs also to ``docs/images/`` (how the pictures in
``docs/server.md`` are made)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from server_helpers import free_port

from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.rest import create_app

CHROMIUM = os.environ.get("COGMEM_TEST_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("COGMEM_TEST_ARTIFACTS", "test-artifacts")) / "inspector"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


@asynccontextmanager
async def serving(memory: Memory, token: str) -> AsyncIterator[str]:
    """The app over ``memory`` served on a free loopback port: its base URL."""
    uvicorn = pytest.importorskip("uvicorn")
    port = free_port()
    app = create_app(memory, token=token)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """Headless Chromium, launched for the test and closed after it."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set COGMEM_TEST_CHROMIUM)")
    playwright_api = pytest.importorskip("playwright.async_api")
    async with playwright_api.async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            await launched.close()


def watch_errors(page: Any) -> list[str]:
    """The page's uncaught errors and console errors (a failed request among them), as they come."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("console", lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None)
    return errors


async def shot(page: Any, name: str, *, docs: bool = False) -> None:
    """A full-page screenshot into the artifacts (and ``docs/images/`` when asked for docs)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    if docs and os.environ.get("COGMEM_DOCS_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(DOCS_IMAGES / f"inspector-{name}.png"), full_page=True)
