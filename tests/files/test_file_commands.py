"""MemoryFiles.run: the six commands of Anthropic's memory tool (memory_20250818) with their exact
answers and errors, on the in-process store and on SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter
from cogitator_memory.files import MemoryFileError, MemoryFiles

ANA = {"scope": {"agent_id": "concierge", "user_id": "ana"}}

LISTING = "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and node_modules:"


@pytest.fixture(params=["memory", "sqlite"])
async def files(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryFiles]:
    store = InMemoryAdapter() if request.param == "memory" else SQLiteAdapter(path=str(tmp_path / "m.db"))
    async with store:
        yield MemoryFiles(adapter=store)


async def run(files: MemoryFiles, **command: Any) -> str:
    return await files.run(ANA, command)


async def refused(files: MemoryFiles, **command: Any) -> str:
    with pytest.raises(MemoryFileError) as caught:
        await files.run(ANA, command)
    return str(caught.value)


async def test_view_of_an_empty_memory_is_the_root_alone(files: MemoryFiles) -> None:
    assert await run(files, command="view", path="/memories") == LISTING.format(path="/memories") + "\n0B\t/memories"
    assert await run(files, command="view", path="/memories/") == LISTING.format(path="/memories") + "\n0B\t/memories"


async def test_create_then_view_the_file_with_numbered_lines(files: MemoryFiles) -> None:
    text = "Hello World\nThis is line two\n"
    assert await run(files, command="create", path="/memories/notes.txt", file_text=text) == (
        "File created successfully at: /memories/notes.txt"
    )
    assert await run(files, command="view", path="/memories/notes.txt") == (
        "Here's the content of /memories/notes.txt with line numbers:\n"
        "     1\tHello World\n"
        "     2\tThis is line two\n"
        "     3\t"
    )


async def test_view_range_picks_lines_and_minus_one_reads_to_the_end(files: MemoryFiles) -> None:
    lines = "\n".join(f"line {n}" for n in range(1, 121))
    await run(files, command="create", path="/memories/long.md", file_text=lines)
    assert await run(files, command="view", path="/memories/long.md", view_range=[99, 101]) == (
        "Here's the content of /memories/long.md with line numbers:\n"
        "    99\tline 99\n"
        "   100\tline 100\n"
        "   101\tline 101"
    )
    tail = await run(files, command="view", path="/memories/long.md", view_range=[119, -1])
    assert tail.splitlines()[1:] == ["   119\tline 119", "   120\tline 120"]
    message = await refused(files, command="view", path="/memories/long.md", view_range=[1])
    assert message.startswith("Error: Invalid `view_range` parameter: [1].")
    assert await refused(files, command="view", path="/memories", view_range=[1, 2]) == (
        "The `view_range` parameter is not allowed when `path` points to a directory."
    )


async def test_view_of_a_directory_two_levels_deep_with_sizes(files: MemoryFiles) -> None:
    for path, text in [
        ("/memories/customer_service_guidelines.xml", "x" * 1536),
        ("/memories/refund_policies.xml", "y" * 2048),
        ("/memories/people/ana/notes.md", "Likes crime novels."),
        ("/memories/people/ana/deeper/too-deep.md", "z" * 10),
        ("/memories/people/bo.md", "b" * 20),
        ("/memories/.hidden/secret.md", "s"),
        ("/memories/node_modules/pkg.js", "n"),
        ("/memories/people/.draft.md", "d"),
    ]:
        await run(files, command="create", path=path, file_text=text)
    assert await run(files, command="view", path="/memories") == "\n".join(
        [
            LISTING.format(path="/memories"),
            "3.6K\t/memories",
            "1.5K\t/memories/customer_service_guidelines.xml",
            "50B\t/memories/people/",
            "29B\t/memories/people/ana/",
            "20B\t/memories/people/bo.md",
            "2K\t/memories/refund_policies.xml",
        ]
    )
    assert await run(files, command="view", path="/memories/people") == "\n".join(
        [
            LISTING.format(path="/memories/people"),
            "50B\t/memories/people",
            "29B\t/memories/people/ana/",
            "10B\t/memories/people/ana/deeper/",
            "19B\t/memories/people/ana/notes.md",
            "20B\t/memories/people/bo.md",
        ]
    )


async def test_view_of_a_missing_path(files: MemoryFiles) -> None:
    assert await refused(files, command="view", path="/memories/nothing.md") == (
        "The path /memories/nothing.md does not exist. Please provide a valid path."
    )


async def test_create_refuses_an_existing_file_and_files_under_files(files: MemoryFiles) -> None:
    await run(files, command="create", path="/memories/a.md", file_text="one")
    assert await refused(files, command="create", path="/memories/a.md", file_text="two") == (
        "Error: File /memories/a.md already exists"
    )
    assert await refused(files, command="create", path="/memories/a.md/b.md", file_text="x") == (
        "Error: /memories/a.md is a file, so /memories/a.md/b.md cannot be created under it"
    )
    await run(files, command="create", path="/memories/dir/b.md", file_text="x")
    assert await refused(files, command="create", path="/memories/dir", file_text="x") == (
        "Error: The path /memories/dir is a directory"
    )
    assert await refused(files, command="create", path="/memories", file_text="x") == (
        "Error: The path /memories is a directory"
    )
    assert await refused(files, command="create", path="/memories/c.md") == (
        "Error: Parameter `file_text` is required for command: create"
    )


async def test_str_replace_answers_with_a_snippet(files: MemoryFiles) -> None:
    text = "\n".join(f"line {n}" for n in range(1, 11))
    await run(files, command="create", path="/memories/p.txt", file_text=text)
    assert await run(
        files, command="str_replace", path="/memories/p.txt", old_str="line 5", new_str="five\nand a half"
    ) == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     3\tline 3\n"
        "     4\tline 4\n"
        "     5\tfive\n"
        "     6\tand a half\n"
        "     7\tline 6\n"
        "     8\tline 7"
    )
    await run(files, command="str_replace", path="/memories/p.txt", old_str="and a half\n")
    view = await run(files, command="view", path="/memories/p.txt", view_range=[5, 6])
    assert view.endswith("     5\tfive\n     6\tline 6"), "new_str left out deletes old_str"


async def test_str_replace_errors(files: MemoryFiles) -> None:
    await run(files, command="create", path="/memories/prefs.txt", file_text="Favorite color: blue\nblue sky\nblue\n")
    assert await refused(files, command="str_replace", path="/memories/prefs.txt", old_str="green", new_str="x") == (
        "No replacement was performed, old_str `green` did not appear verbatim in /memories/prefs.txt."
    )
    assert await refused(files, command="str_replace", path="/memories/prefs.txt", old_str="blue", new_str="x") == (
        "No replacement was performed. Multiple occurrences of old_str `blue` in lines: 1, 2, 3. Please ensure it is unique"
    )
    assert await refused(files, command="str_replace", path="/memories/none.txt", old_str="a", new_str="b") == (
        "Error: The path /memories/none.txt does not exist. Please provide a valid path."
    )
    await run(files, command="create", path="/memories/dir/x.md", file_text="a")
    assert await refused(files, command="str_replace", path="/memories/dir", old_str="a", new_str="b") == (
        "Error: The path /memories/dir does not exist. Please provide a valid path."
    )


async def test_insert_at_the_top_in_the_middle_and_at_the_end(files: MemoryFiles) -> None:
    await run(files, command="create", path="/memories/todo.txt", file_text="one\ntwo\n")
    assert await run(files, command="insert", path="/memories/todo.txt", insert_line=0, insert_text="# Todo\n") == (
        "The file /memories/todo.txt has been edited."
    )
    await run(
        files,
        command="insert",
        path="/memories/todo.txt",
        insert_line=2,
        insert_text="- Review memory tool documentation\n",
    )
    await run(files, command="insert", path="/memories/todo.txt", insert_line=4, insert_text="three")
    shown = await run(files, command="view", path="/memories/todo.txt")
    assert shown.splitlines()[1:] == [
        "     1\t# Todo",
        "     2\tone",
        "     3\t- Review memory tool documentation",
        "     4\ttwo",
        "     5\tthree",
        "     6\t",
    ]
    assert await refused(files, command="insert", path="/memories/todo.txt", insert_line=9, insert_text="x") == (
        "Error: Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 5]"
    )
    assert await refused(files, command="insert", path="/memories/todo.txt", insert_line=-1, insert_text="x") == (
        "Error: Invalid `insert_line` parameter: -1. It should be within the range of lines of the file: [0, 5]"
    )
    assert await refused(files, command="insert", path="/memories/nope.txt", insert_line=0, insert_text="x") == (
        "Error: The path /memories/nope.txt does not exist"
    )


async def test_delete_a_file_and_a_directory(files: MemoryFiles) -> None:
    await run(files, command="create", path="/memories/old_file.txt", file_text="x")
    await run(files, command="create", path="/memories/dir/a.md", file_text="a")
    await run(files, command="create", path="/memories/dir/sub/b.md", file_text="b")
    assert (
        await run(files, command="delete", path="/memories/old_file.txt")
        == "Successfully deleted /memories/old_file.txt"
    )
    assert await run(files, command="delete", path="/memories/dir") == "Successfully deleted /memories/dir"
    assert await run(files, command="view", path="/memories") == LISTING.format(path="/memories") + "\n0B\t/memories"
    assert await refused(files, command="delete", path="/memories/old_file.txt") == (
        "Error: The path /memories/old_file.txt does not exist"
    )
    assert await refused(files, command="delete", path="/memories") == "Cannot delete the /memories directory itself"
    history = await files.history(ANA, "/memories/dir/sub/b.md")
    assert [(v.sequence, v.content) for v in history] == [(1, "b"), (2, None)], "a deletion is a version"


async def test_rename_a_file_and_a_directory(files: MemoryFiles) -> None:
    await run(files, command="create", path="/memories/draft.txt", file_text="draft")
    assert await run(files, command="rename", old_path="/memories/draft.txt", new_path="/memories/final.txt") == (
        "Successfully renamed /memories/draft.txt to /memories/final.txt"
    )
    await run(files, command="create", path="/memories/customers/ana/notes.md", file_text="Likes crime.")
    await run(files, command="create", path="/memories/customers/bo.md", file_text="Bo")
    assert await run(files, command="rename", old_path="/memories/customers", new_path="/memories/people") == (
        "Successfully renamed /memories/customers to /memories/people"
    )
    listed = {f.path: f.content for f in await files.list(ANA)}
    assert listed == {
        "/memories/final.txt": "draft",
        "/memories/people/ana/notes.md": "Likes crime.",
        "/memories/people/bo.md": "Bo",
    }
    moved = (await files.history(ANA, "/memories/people/bo.md"))[0]
    assert moved.renamed_from == "/memories/customers/bo.md" and moved.sequence == 1
    assert await refused(files, command="rename", old_path="/memories/gone.md", new_path="/memories/x.md") == (
        "Error: The path /memories/gone.md does not exist"
    )
    assert await refused(
        files, command="rename", old_path="/memories/final.txt", new_path="/memories/people/bo.md"
    ) == ("Error: The destination /memories/people/bo.md already exists")
    assert await refused(files, command="rename", old_path="/memories/final.txt", new_path="/memories/people") == (
        "Error: The destination /memories/people already exists"
    )
    assert await refused(files, command="rename", old_path="/memories/people", new_path="/memories/people/inner") == (
        "Error: Cannot move /memories/people into itself (/memories/people/inner)"
    )
    assert await refused(files, command="rename", old_path="/memories", new_path="/memories/x") == (
        "Cannot rename the /memories directory itself"
    )
    assert await refused(files, command="rename", old_path="/memories/people", new_path="/memories/final.txt/x") == (
        "Error: /memories/final.txt is a file, so /memories/final.txt/x cannot be created under it"
    )


async def test_parameters_and_unknown_commands(files: MemoryFiles) -> None:
    assert await refused(files, command="view") == "Error: Parameter `path` is required for command: view"
    assert await refused(files, command="rename", old_path="/memories/a") == (
        "Error: Parameter `new_path` is required for command: rename"
    )
    assert await refused(files, command="insert", path="/memories/a", insert_text="x") == (
        "Error: Parameter `insert_line` is required for command: insert"
    )
    assert await refused(files, command="str_replace", path="/memories/a", old_str=3) == (
        "Error: Parameter `old_str` must be text"
    )
    message = await refused(files, command="undo", path="/memories")
    assert message.startswith("Error: Unknown command 'undo'.")
    await run(files, command="create", path="/memories/t.md", file_text="a\nb\n")
    message = await refused(files, command="insert", path="/memories/t.md", insert_line="1", insert_text="x")
    assert (
        message
        == "Error: Invalid `insert_line` parameter: 1. It should be within the range of lines of the file: [0, 2]"
    )
