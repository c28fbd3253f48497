"""``cogitator-memory forget``: one plan, shown by the dry run and by the real run, then carried out
through ``Memory``'s cascade; what was kept for a user with no thread (remembered graph facts,
core facts, memory items) goes too; ``import --user`` makes a conversation the user's, so it is
found and forgotten by user (issue 35 item 4)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import Memory
from cogitator_memory.cli import main


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("COGITATOR_MEMORY_DB", "COGITATOR_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COGITATOR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "100")


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = cli(capsys, *argv)
    assert code == 0, f"{argv}: {err}"
    return out


def _memory(db: Path) -> dict[str, Any]:
    return {"path": str(db), "embedding": {"provider": "none"}}


def seed_without_thread(db: Path) -> str:
    """A user with no thread: a remembered graph fact, a core fact and a memory item, under the
    config's agent."""

    async def work() -> str:
        async with Memory(_memory(db)) as memory:
            await memory.remember("Ana is allergic to peanuts", user_id="ana")
            await memory.remember("Ana", core_fact_key="user_name", user_id="ana")
            item = await memory.items.add(
                {
                    "kind": "preference",
                    "subject": "user",
                    "attribute": "drink",
                    "value": "green tea",
                    "trust": "user",
                    "scope": {"agent_id": memory.agent_id, "user_id": "ana"},
                }
            )
            await memory.remember("Bo likes chess", user_id="bo")
            return item.id

    return asyncio.run(work())


def test_forget_user_without_a_thread_plans_and_takes_their_facts_graph_and_items(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    item_id = seed_without_thread(db)
    dry = ok(capsys, "forget", "user", "ana", "--db", str(db), "--dry-run")
    assert "nothing to forget" not in dry
    assert "1 core fact: user_name=Ana" in dry and "Ana is allergic to peanuts" in dry and "green tea" in dry
    assert "Nothing was changed." in dry
    plan = json.loads(ok(capsys, "forget", "user", "ana", "--db", str(db), "--dry-run", "--json"))
    assert plan["threads"] == [] and plan["entries"] == {}
    assert [r["id"] for r in plan["items"]] == [item_id]
    assert [r["core_key"] for r in plan["core_facts"]] == ["user_name"]
    assert "Ana is allergic to peanuts" in [n["name"] for n in plan["graph_nodes"]]
    assert "Bo likes chess" not in [n["name"] for n in plan["graph_nodes"]]

    real = ok(capsys, "forget", "user", "ana", "--db", str(db))
    shown = dry.replace("Dry run: forgetting user ana would take:", "Forgetting user ana takes:")
    shown = shown.replace("Nothing was changed.\n", "")
    assert real.startswith(shown), "the real run shows the dry run's plan before it forgets"
    assert "Forgot user ana:" in real

    assert "nothing found" in ok(capsys, "recall", "peanuts", "--user", "ana", "--db", str(db))
    assert json.loads(ok(capsys, "facts", "--user", "ana", "--db", str(db), "--json")) == {"facts": {}}
    assert json.loads(ok(capsys, "search", "tea", "--user", "ana", "--db", str(db), "--json")) == {"results": []}
    again = ok(capsys, "forget", "user", "ana", "--db", str(db), "--dry-run")
    assert again.startswith("Dry run: nothing to forget for user ana.")
    kept = json.loads(ok(capsys, "recall", "chess", "--user", "bo", "--db", str(db), "--json"))
    assert [r["fact"] for r in kept["results"]] == ["Bo likes chess"], "another user's fact stays"


def test_the_real_run_carries_out_the_plan_it_shows(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"

    async def work() -> None:
        async with Memory(_memory(db)) as memory:
            await memory.add(
                [{"role": "user", "content": "I run 40 km a week"}, {"role": "assistant", "content": "Nice!"}],
                user_id="ana",
                thread_id="ana-chat",
            )
            await memory.remember("Ana runs marathons", user_id="ana")
            await memory.remember("Ana", core_fact_key="user_name", user_id="ana")

    asyncio.run(work())
    dry = json.loads(ok(capsys, "forget", "user", "ana", "--db", str(db), "--dry-run", "--json"))
    done = json.loads(ok(capsys, "forget", "user", "ana", "--db", str(db), "--json"))
    assert done["plan"] == {k: v for k, v in dry.items() if k != "dry_run"}, "the dry run's plan, carried out"
    planned = dry["counts"]
    assert done["threads"] == planned["threads"] == 1
    assert done["entries"]["deleted"] == planned["entries"] == 2
    assert done["graph"]["nodes"] == planned["graph_nodes"] == 2
    assert (
        done["items"]["purged"] + done["facts"]["deleted"]
        == planned["items"] + planned["core_facts"] + planned["facts"]
    )


def test_forget_with_another_agent_takes_what_is_kept_under_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = tmp_path / "m.db"

    async def work() -> None:
        async with Memory(_memory(db)) as memory:
            await memory.remember("Ana flies to Porto", user_id="ana", agent_id="travel")
            await memory.remember("Ana likes jazz", user_id="ana")

    asyncio.run(work())
    plan = json.loads(ok(capsys, "forget", "user", "ana", "--db", str(db), "--dry-run", "--json"))
    assert [n["name"] for n in plan["graph_nodes"]] == ["Ana likes jazz"], "the config's agent only"
    both = json.loads(ok(capsys, "forget", "user", "ana", "--agent", "travel", "--db", str(db), "--json"))
    assert sorted(n["name"] for n in both["plan"]["graph_nodes"]) == ["Ana flies to Porto", "Ana likes jazz"]
    assert both["graph"]["nodes"] == 2
    left = json.loads(ok(capsys, "recall", "Porto", "--user", "ana", "--agent", "travel", "--db", str(db), "--json"))
    assert left["results"] == []


def test_import_user_makes_the_conversation_theirs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps(
            [
                {"role": "user", "content": "I'm allergic to peanuts."},
                {"role": "assistant", "content": "Noted: no peanuts."},
            ]
        )
    )
    done = json.loads(
        ok(
            capsys,
            "import",
            str(chat),
            "--user",
            "ana",
            "--agent",
            "default",
            "--thread",
            "ana-1",
            "--db",
            str(db),
            "--json",
        )
    )
    assert (done["thread_id"], done["user_id"], done["agent_id"]) == ("ana-1", "ana", "default")
    text = ok(capsys, "import", str(chat), "--user", "ana", "--agent", "default", "--db", str(db))
    assert "for user ana" in text
    hits = json.loads(ok(capsys, "search", "allergies", "--user", "ana", "--db", str(db), "--json"))["results"]
    assert any("peanuts" in h["text"] for h in hits), "the user's search finds the imported turns"
    assert json.loads(ok(capsys, "search", "allergies", "--user", "bo", "--db", str(db), "--json"))["results"] == []

    code, _, err = cli(capsys, "import", str(chat), "--user", "bo", "--thread", "ana-1", "--db", str(db))
    assert code == 1 and "thread ana-1 is user ana's, not user bo's" in err

    exported = tmp_path / "ana.json"
    ok(capsys, "export", "ana-1", "--out", str(exported), "--db", str(db))
    moved = json.loads(
        ok(capsys, "import", str(exported), "--thread", "bo-copy", "--user", "bo", "--db", str(db), "--json")
    )
    assert moved["user_id"] == "bo", "--user replaces the exported thread's user"

    plan = json.loads(ok(capsys, "forget", "user", "ana", "--db", str(db), "--dry-run", "--json"))
    assert len(plan["threads"]) == 2 and "ana-1" in plan["threads"]
    ok(capsys, "forget", "user", "ana", "--db", str(db))
    assert json.loads(ok(capsys, "search", "allergies", "--user", "ana", "--db", str(db), "--json"))["results"] == []
    listed = json.loads(ok(capsys, "threads", "--db", str(db), "--json"))["threads"]
    assert [t["id"] for t in listed] == ["bo-copy"]
