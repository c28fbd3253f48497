"""One forget, everywhere: forgetting a user from Python (``Memory.forget_user``), the CLI
(``forget user``) and REST (``POST /api/forget``, what the inspector calls) goes through the one
cascade routine (``MemoryCascade.delete_user``) with the same settings, so each leaves the same
thing behind: nothing of the user, their core facts included, and none of their text in the
bytes of the SQLite file or its WAL, read while the server is still running. Each goes past
someone else's thread that lists the user and holds ids that are not ids, and says so."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest

from cogitator_memory import clock, unwrap
from cogitator_memory.cli import main
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.server.rest import create_app

TOKEN = "a-long-enough-test-token-for-forget"
SURFACES = ["python", "cli", "rest"]


@pytest.fixture(autouse=True)
def _no_db_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COGITATOR_MEMORY_DB", raising=False)


def config(path: Path) -> dict[str, Any]:
    return {"adapter": "sqlite", "path": str(path), "embedding": {"provider": "hashing"}}


def raw(path: Path) -> bytes:
    """The file and its WAL, as bytes."""
    return b"".join(f.read_bytes() for f in (path, path.with_name(path.name + "-wal")) if f.exists())


async def seed(memory: Memory, secret: str, keep: str) -> None:
    """Ana's conversation, a fact and a core fact holding ``secret``; Bo's holding ``keep``."""
    said = [
        {"role": "user", "content": f"My passport number is {secret}. " * 8},
        {"role": "assistant", "content": f"Noted: {secret}."},
    ]
    await memory.add(said, user_id="ana", thread_id="ana-chat")
    await memory.remember(f"Ana's passport is {secret}", core_fact_key="passport", user_id="ana")
    await memory.add([{"role": "user", "content": f"I drink {keep} tea. " * 8}], user_id="bo", thread_id="bo-chat")
    await memory.remember(f"Bo drinks {keep}", core_fact_key="drink", user_id="bo")
    # Bo's group thread lists Ana and holds ids written before the writes were checked
    await memory.add([{"role": "user", "content": "Bo's group."}], user_id="bo", thread_id="bo-group")
    unwrap(await memory.adapter.update_thread("bo-group", {"memory_user_ids": ["ana"]}))
    ana_in_group = {"role": "user", "content": f"Ana here, passport {secret}."}
    unwrap(
        await memory.adapter.add_entry(
            {"thread_id": "bo-group", "message": ana_in_group, "metadata": {"user_id": "ana"}}
        )
    )
    planted = {"memory_forks": [""], "memory_agent_ids": ["\t"]}
    await memory.adapter._upsert_thread("bo-group", "default", planted, clock.now())
    await memory.flush()
    assert await memory.facts(user_id="ana") == {"passport": f"Ana's passport is {secret}"}


async def forget_through(surface: str, memory: Memory) -> dict[str, Any]:
    """Forget ana through ``surface`` while ``memory`` (the running app's) stays open."""
    if surface == "python":
        return (await memory.forget_user("ana")).dump()
    app = create_app(memory, token=TOKEN)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answer = await client.post("/api/forget", json={"user_id": "ana"}, headers={"authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200, answer.text
    counts: dict[str, Any] = answer.json()["counts"]
    return counts


@pytest.mark.parametrize("surface", SURFACES)
def test_forgetting_a_user_leaves_the_same_nothing_on_every_surface(
    surface: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "memory.db"
    secret = f"PASSPORT{secrets.token_hex(6).upper()}"
    keep = f"KEEPTEA{secrets.token_hex(4).upper()}"

    async def seeded() -> None:
        async with Memory(config(path)) as memory:
            await seed(memory, secret, keep)

    asyncio.run(seeded())
    assert secret.encode() in raw(path)

    async def forgotten() -> tuple[dict[str, Any], bytes]:
        async with Memory(config(path)) as memory:
            counts = await forget_through(surface, memory)
            return counts, raw(path)  # read while the app is still running: no close-time checkpoint

    if surface == "cli":
        assert main(["forget", "user", "ana", "--db", str(path)]) == 0
        out = capsys.readouterr().out
        assert "threads deleted: 1" in out
        assert "skipped: thread bo-group: metadata.memory_forks[0] skipped: must not be empty" in out
        data = raw(path)
    else:
        counts, data = asyncio.run(forgotten())
        assert counts["threads"] == 1
        assert counts["skipped"] == [
            "thread bo-group: metadata.memory_agent_ids[0] skipped: must not be empty",
            "thread bo-group: metadata.memory_forks[0] skipped: must not be empty",
        ]
    where = data.find(secret.encode())
    assert where < 0, f"the forgotten text is still in the file: {data[max(0, where - 60) : where + 60]!r}"
    assert keep.encode() in data, "the scan reads the file (what stays is there)"

    async def left() -> None:
        async with Memory(config(path)) as memory:
            assert await memory.facts(user_id="ana") == {}, "ana's core facts are gone"
            assert await memory.facts(user_id="bo") == {"drink": f"Bo drinks {keep}"}
            assert unwrap(await memory.adapter.get_thread("ana-chat")) is None
            assert unwrap(await memory.adapter.get_thread("bo-chat")) is not None
            group = unwrap(await memory.adapter.get_entries("bo-group"))
            assert [e.message.text for e in group if e.message] == ["Bo's group."], "Ana's words in it go"

    asyncio.run(left())
