"""The playbook file and its edits (no I/O), entity names, and what the memory tool may not touch."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from cogitator_memory import InMemoryAdapter
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.files import MemoryFiles, run_memory_tool
from cogitator_memory.files.paths import MEMORY_RESERVED_PATHS
from cogitator_memory.items import MemoryItem
from cogitator_memory.upkeep import (
    MAX_PLAYBOOK_EDITS,
    OBSERVATIONS_DIRECTORY,
    PLAYBOOK_DRAFT_PATH,
    PLAYBOOK_PATH,
    Playbook,
    PlaybookEdit,
    PlaybookRule,
    apply_playbook_edits,
    parse_playbook,
    parse_playbook_edits,
    playbook_file,
)
from cogitator_memory.upkeep.observations import entities_of

AT = datetime(2026, 3, 1, tzinfo=UTC)


def test_a_playbook_file_reads_back_as_it_was_written() -> None:
    book = Playbook(
        rules=(PlaybookRule("Confirm dates.", ("mem_1", "mem_2")), PlaybookRule("Be brief.", ("mem_3",))),
        through=(AT, "mem_3"),
        draft_of="none",
        waiting=("mem_9",),
    )
    text = playbook_file(book)
    assert "- Confirm dates. [lesson:mem_1] [lesson:mem_2]" in text
    assert parse_playbook(text) == book
    person = text + "A note a person wrote.\n- A rule a person added.\n"
    assert [r.text for r in parse_playbook(person).rules][-1] == "A rule a person added."
    with pytest.raises(InvalidArgumentError, match="text"):
        parse_playbook(None)  # type: ignore[arg-type]


def test_edits_that_do_not_hold_are_left_out() -> None:
    book = Playbook(rules=(PlaybookRule("Confirm  dates.", ("mem_1",)),))
    answer = json.dumps(
        [
            {
                "op": "rewrite",
                "quote": "Confirm dates.",
                "rule": "Confirm dates and times.",
                "lessons": ["lesson:mem_2"],
            },
            {"op": "rewrite", "quote": "Confirm dates.", "rule": "Twice.", "lessons": ["mem_2"]},  # one rewrite a rule
            {"op": "delete", "rule": "Everything.", "lessons": ["mem_2"]},
            {"op": "add", "rule": "Two\nlines.", "lessons": ["mem_2"]},  # made one line
            {"op": "add", "rule": "No lessons.", "lessons": []},
            {"op": "add", "rule": "Marks stripped [lesson:mem_9]", "lessons": ["mem_2"]},
        ]
    )
    edits = parse_playbook_edits(answer, ["mem_2"], book)
    assert edits == [
        PlaybookEdit("rewrite", "Confirm dates and times.", ("mem_2",), quote="Confirm dates."),
        PlaybookEdit("add", "Two lines.", ("mem_2",)),
        PlaybookEdit("add", "Marks stripped", ("mem_2",)),
    ]
    done, applied = apply_playbook_edits(book, edits or [])
    assert applied == edits and done.rules[0] == PlaybookRule("Confirm dates and times.", ("mem_1", "mem_2"))
    assert parse_playbook_edits(answer[:-5], ["mem_2"], book) is None  # cut: folds nothing
    assert parse_playbook_edits("No edits today.", ["mem_2"], book) is None
    many = json.dumps([{"op": "add", "rule": f"Rule {n}.", "lessons": ["mem_2"]} for n in range(9)])
    assert len(parse_playbook_edits(many, ["mem_2"]) or []) == MAX_PLAYBOOK_EDITS
    full, added = apply_playbook_edits(book, [PlaybookEdit("add", "One more.", ("mem_2",))], max_rules=1)
    assert added == [] and full == book


def test_an_entity_is_named_by_its_newest_subject_and_keeps_the_others() -> None:
    def item(n: int, subject: str, entity: str | None = "ent_bo", kind: str = "fact") -> MemoryItem:
        return MemoryItem(
            id=f"mem_{n}", kind=kind, subject=subject, value=f"v{n}", trust="system", entity_id=entity,
            scope={"agent_id": "a"}, status="active", recorded_at=datetime(2026, 3, n, tzinfo=UTC),
        )  # fmt: skip

    found = entities_of(
        [item(1, "Roberto"), item(2, "bo"), item(3, "Bo"), item(4, "Ana", None), item(5, "x", kind="lesson")]
    )
    assert sorted(found) == ["e:ent_bo", "s:ana"]
    assert found["e:ent_bo"].name == "Bo" and found["e:ent_bo"].aliases == ["Roberto"]


async def test_the_memory_tool_views_reserved_paths_and_changes_none() -> None:
    assert (PLAYBOOK_PATH, PLAYBOOK_DRAFT_PATH, OBSERVATIONS_DIRECTORY) == MEMORY_RESERVED_PATHS
    async with InMemoryAdapter() as memory:
        files = MemoryFiles(adapter=memory)
        ana = {"scope": {"agent_id": "concierge", "user_id": "ana"}}
        await files.put({**ana, "author": "memory"}, PLAYBOOK_PATH, "# Playbook\n\n- Be kind.\n")
        await files.put(ana, "/memories/notes.md", "n")
        for command in (
            {"command": "create", "path": PLAYBOOK_DRAFT_PATH, "file_text": "x"},
            {"command": "str_replace", "path": PLAYBOOK_PATH, "old_str": "kind", "new_str": "cruel"},
            {"command": "delete", "path": PLAYBOOK_PATH},
            {"command": "rename", "old_path": "/memories/notes.md", "new_path": OBSERVATIONS_DIRECTORY + "/n.md"},
        ):
            answer = await run_memory_tool(files, ana, command)
            assert answer.is_error and "is kept by memory itself and is read-only here" in answer.content
        viewed = await run_memory_tool(files, ana, {"command": "view", "path": PLAYBOOK_PATH})
        assert not viewed.is_error and "Be kind." in viewed.content
        assert await run_memory_tool(files, ana, {"command": "create", "path": "/memories/b.md", "file_text": "b"})
