"""A dead embedding service (issue 35 item 6), through a real HTTP server on loopback that fails
and then recovers: ``search`` (Python and the CLI) goes on by keywords with a warning; the
message index keeps the entries it could not embed waiting (never dropped), warns how many, and
embeds them later: in the same process once the service answers, and at the next start."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import Memory
from cogitator_memory.context.message_index import WAITING_KEY
from cogitator_memory.embeddings import cooldown
from cogitator_memory.testing.scripted_server import ScriptedResponse, ScriptedServer, openai_embeddings_handler

SAID = [
    {"role": "user", "content": "I'm allergic to peanuts."},
    {"role": "assistant", "content": "Noted: no peanuts."},
]


def _down(server: ScriptedServer) -> None:
    server.fallback("/v1/embeddings", lambda _: ScriptedResponse(503, {"error": {"message": "service down"}}))


def _up(server: ScriptedServer) -> None:
    server.fallback("/v1/embeddings", openai_embeddings_handler(dimensions=8))


def _config(server: ScriptedServer, db: Path) -> dict[str, Any]:
    embedding = {"provider": "openai", "model": "m", "api_key": "k", "base_url": f"{server.url}/v1", "dimensions": 8}
    return {"path": str(db), "embedding": embedding}


def _warnings(caplog: pytest.LogCaptureFixture, needle: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and needle in r.getMessage()]


def test_entries_wait_through_an_outage_and_are_embedded_at_the_next_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    caplog.set_level(logging.WARNING, logger="cogitator_memory")

    async def run() -> None:
        with ScriptedServer() as server:
            _down(server)
            async with Memory(_config(server, db)) as memory:
                added = await memory.add(SAID, user_id="ana")
                ids = [e.id for e in added.entries]
                started = time.monotonic()
                await memory.flush()
                assert time.monotonic() - started < 15, "the index does not retry a service that retried itself"
                index = memory.message_index
                assert index is not None
                assert index.waiting == 2 and index.failed == 2
                assert await index.vectors_of(ids) == {}
                said = _warnings(caplog, "are waiting for the embedding service")
                assert said and "2 entries of 1 threads" in said[-1], "a warning names how many wait"
                kept = json.loads(unwrap_state(await memory.adapter.get_recall_state(WAITING_KEY)))
                assert kept == [added.thread_id], "the threads waiting outlive the process"

                hits = await memory.search("allergies", user_id="ana")  # the service is still down
                assert [h.text for h in hits][:1] == ["I'm allergic to peanuts."]
                assert _warnings(caplog, "searching by keywords"), "search says it fell back"

            _up(server)  # the service is back; a new process opens the store
            async with Memory(_config(server, db)) as memory:
                await memory.flush()
                index = memory.message_index
                assert index is not None
                assert set(await index.vectors_of(ids)) == set(ids), "embedded at the next start"
                assert index.waiting == 0
                assert json.loads(unwrap_state(await memory.adapter.get_recall_state(WAITING_KEY))) == []
                hits = await memory.search("allergies", user_id="ana")
                assert hits and hits[0].text == "I'm allergic to peanuts."

    asyncio.run(run())


def unwrap_state(result: Any) -> str:
    assert result.success, result.error
    return str(result.data)


def test_entries_waiting_are_embedded_in_the_same_process_once_the_service_answers(tmp_path: Path) -> None:
    async def run() -> None:
        with ScriptedServer() as server:
            _down(server)
            async with Memory(_config(server, tmp_path / "m.db")) as memory:
                added = await memory.add(SAID, user_id="ana")
                await memory.flush()
                index = memory.message_index
                assert index is not None and index.waiting == 2
                _up(server)
                assert index.retry_failed(after=0) == 1  # what a search or flush does RETRY_AFTER s later
                await memory.flush()
                assert set(await index.vectors_of([e.id for e in added.entries])) == {e.id for e in added.entries}
                assert index.waiting == 0

    asyncio.run(run())


def test_a_forgotten_thread_waits_no_more(tmp_path: Path) -> None:
    async def run() -> None:
        with ScriptedServer() as server:
            _down(server)
            async with Memory(_config(server, tmp_path / "m.db")) as memory:
                added = await memory.add(SAID, user_id="ana")
                await memory.flush()
                await memory.forget_user("ana")
                await memory.flush()
                index = memory.message_index
                assert index is not None and index.waiting == 0
                state = unwrap_state(await memory.adapter.get_recall_state(WAITING_KEY))
                assert added.thread_id not in json.loads(state)

    asyncio.run(run())


def test_cli_search_falls_back_to_keywords_with_a_warning(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with ScriptedServer() as server:
        _up(server)

        async def seed() -> None:
            async with Memory(_config(server, db)) as memory:
                await memory.add(SAID, user_id="ana")

        asyncio.run(seed())
        _down(server)
        config = tmp_path / "cogitator.yml"
        config.write_text(json.dumps({"memory": _config(server, db)}))  # JSON is YAML
        env = {k: v for k, v in os.environ.items() if k not in ("COGITATOR_MEMORY_DB", "COGITATOR_CONFIG")}
        env["COGITATOR_HOME"] = str(tmp_path / "home")
        run = subprocess.run(
            [sys.executable, "-m", "cogitator_memory", "search", "allergies", "--user", "ana", "--json"],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # ./cogitator.yml names the store and the dead service
            env=env,
            timeout=120,
        )
    assert run.returncode == 0, run.stderr
    assert [h["text"] for h in json.loads(run.stdout)["results"]][:1] == ["I'm allergic to peanuts."]
    assert "the embedding service failed" in run.stderr and "searching by keywords" in run.stderr
    assert "Traceback" not in run.stderr and "EmbeddingServiceError" not in run.stderr


def test_cli_forget_leaves_waiting_entries_to_a_process_that_embeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """``forget`` embeds nothing (it reads and deletes the vectors as stored): the entries another
    thread waits with stay waiting, and a forgotten thread waits no more."""
    from cogitator_memory.cli import main

    db = tmp_path / "m.db"

    async def outage() -> str:
        with ScriptedServer() as server:
            _down(server)
            async with Memory(_config(server, db)) as memory:
                ana = await memory.add(SAID, user_id="ana")
                await memory.add([{"role": "user", "content": "chess on Sunday"}], user_id="bo")
                await memory.flush()
                return ana.thread_id

    async def waiting() -> list[str]:
        async with Memory({"path": str(db), "embedding": {"provider": "none"}}) as memory:
            found: list[str] = json.loads(unwrap_state(await memory.adapter.get_recall_state(WAITING_KEY)))
            return found

    ana_thread = asyncio.run(outage())
    assert len(asyncio.run(waiting())) == 2
    caplog.clear()
    caplog.set_level(logging.WARNING, logger="cogitator_memory")
    assert main(["forget", "user", "bo", "--db", str(db)]) == 0
    assert not [r for r in caplog.records if "embedding" in r.getMessage() and "failed" in r.getMessage()]
    assert asyncio.run(waiting()) == [ana_thread], "bo's thread went; ana's entries still wait"
    assert main(["forget", "user", "ana", "--db", str(db)]) == 0
    assert asyncio.run(waiting()) == []
    capsys.readouterr()


def test_after_a_failure_searches_skip_the_service_until_the_cool_down_ends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first search that finds the service dead waits for it (its timeouts and retries);
    those after it, within ``EMBEDDING_COOLDOWN`` seconds, do not ask it at all and answer by
    keywords at once, with a warning; the first one after the cool-down asks it again."""
    monkeypatch.setattr(cooldown, "EMBEDDING_COOLDOWN", 2.0)  # the setting, shortened for the test
    caplog.set_level(logging.WARNING, logger="cogitator_memory")
    path = "/v1/embeddings"

    async def run() -> None:
        with ScriptedServer() as server:
            _up(server)
            async with Memory(_config(server, tmp_path / "m.db")) as memory:
                await memory.add(SAID, user_id="ana")
                await memory.flush()
                _down(server)
                asked = len(server.requests_to(path))
                started = time.monotonic()
                hits = await memory.search("allergies", user_id="ana")
                first = time.monotonic() - started
                assert hits and hits[0].text == "I'm allergic to peanuts."
                assert _warnings(caplog, "searches skip it for 2 s")
                tried = len(server.requests_to(path))
                assert tried > asked, "the first search asked the service"

                started = time.monotonic()
                hits = await memory.search("allergies", user_id="ana")
                second = time.monotonic() - started
                assert hits and hits[0].text == "I'm allergic to peanuts."
                assert len(server.requests_to(path)) == tried, "the service is not asked during the cool-down"
                assert second < 0.5 and second < first / 2, (first, second)
                assert _warnings(caplog, "is asked again 2 s after the failure")

                _up(server)
                await asyncio.sleep(2.1)
                caplog.clear()
                hits = await memory.search("allergies", user_id="ana")
                assert hits and hits[0].text == "I'm allergic to peanuts."
                assert len(server.requests_to(path)) > tried, "asked again after the cool-down"
                assert not _warnings(caplog, "embedding service"), "it answered: no fallback"
                hits = await memory.search("peanuts", user_id="ana")
                assert hits and not _warnings(caplog, "embedding service")

    asyncio.run(run())


def test_after_a_failure_context_builds_skip_the_service_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cool-down is one rule: a build that finds the service dead waits for it once; the
    builds and searches after it within the cool-down do not ask it (their context is built by
    words, with the failure reported in ``errors``); after the cool-down the service is asked
    again and ranks by meaning."""
    monkeypatch.setattr(cooldown, "EMBEDDING_COOLDOWN", 2.0)  # the setting, shortened for the test
    path = "/v1/embeddings"

    async def run() -> None:
        with ScriptedServer() as server:
            _up(server)
            async with Memory(_config(server, tmp_path / "m.db")) as memory:
                chat = await memory.add(SAID, user_id="ana")
                await memory.flush()
                _down(server)
                asked = len(server.requests_to(path))
                started = time.monotonic()
                built = await memory.build_context(chat.thread_id, user_id="ana", current_input="Any allergies?")
                first = time.monotonic() - started
                assert {e.source for e in built.errors} >= {"relevance"}
                tried = len(server.requests_to(path))
                assert tried > asked, "the first build asked the service"

                started = time.monotonic()
                again = await memory.build_context(chat.thread_id, user_id="ana", current_input="Any food allergies?")
                second = time.monotonic() - started
                assert len(server.requests_to(path)) == tried, "not asked during the cool-down"
                failed = [e for e in again.errors if e.source == "relevance"]
                assert failed and "not asked again" in failed[0].message
                assert second < first / 2, (first, second)
                assert [m.text for m in again.messages if m.role == "user"][:1] == ["I'm allergic to peanuts."]
                hits = await memory.search("allergies", user_id="ana")  # the search shares the cool-down
                assert hits and len(server.requests_to(path)) == tried

                _up(server)
                await asyncio.sleep(2.1)
                later = await memory.build_context(chat.thread_id, user_id="ana", current_input="Nuts again?")
                assert len(server.requests_to(path)) > tried, "asked again after the cool-down"
                assert not [e for e in later.errors if e.source == "relevance"]

    asyncio.run(run())
