"""The conformance suite of memory file stores, written once and run against every store.

:func:`memory_file_adapter_conformance_cases` returns named cases; each takes a fresh,
connected, empty store (one that keeps memory files, see
:class:`~cogitator_memory.files.base.MemoryFileAdapter`) and raises ``AssertionError`` saying
what differed when the store breaks the contract. Run them on a store of your own::

    import pytest
    from cogitator_memory.testing.files import memory_file_adapter_conformance_cases

    @pytest.mark.parametrize("case", memory_file_adapter_conformance_cases(), ids=str)
    async def test_file_conformance(case, store):  # `store`: a fixture yielding a fresh connected store
        await case.run(store)
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import ConflictError, InvalidArgumentError
from ..files.base import MemoryFileAdapter
from ..files.errors import MEMORY_FILE_CONFLICT, MemoryFileConflictError
from ..files.paths import MAX_FILE_BYTES, sha256_of
from ..files.records import REDACTED_TEXT, MemoryFileVersion
from ..result import unwrap
from .cases import CaseList, NamedCase, expect, expect_equal, expect_failed

FileCase = Callable[[Any], Awaitable[None]]


class FileConformanceCase(NamedCase[Any]):
    """One named check of the memory file store contract."""


_CASES = CaseList(FileConformanceCase)
_case = _CASES.case
_eq = expect_equal
_true = expect


def memory_file_adapter_conformance_cases() -> list[FileConformanceCase]:
    """Every case of the memory file store contract, in a stable order."""
    return _CASES.cases()


# --- helpers ------------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
AGENT = "concierge"
ANA = {"agent_id": AGENT, "user_id": "ana"}
SHARED = {"agent_id": AGENT}
_serial = itertools.count(1)


_fails = expect_failed


def _version(path: str = "/memories/notes.md", sequence: int = 1, **fields: Any) -> dict[str, Any]:
    """A complete version as a dict: a fresh id, created at T0 plus a serial number of microseconds."""
    serial = next(_serial)
    base: dict[str, Any] = {
        "id": f"file_conf{serial:08d}",
        "scope": ANA,
        "path": path,
        "sequence": sequence,
        "content": f"text {serial}",
        "author": "model",
        "created_at": T0 + timedelta(microseconds=serial),
    }
    base.update(fields)
    if base.get("content") is None:
        base.pop("content", None)
    return base


async def _add(store: MemoryFileAdapter, *versions: dict[str, Any]) -> list[MemoryFileVersion]:
    return unwrap(await store.add_file_versions(list(versions)))


async def _heads(store: MemoryFileAdapter, **flt: Any) -> list[MemoryFileVersion]:
    return unwrap(await store.find_file_heads(flt))


async def _query(store: MemoryFileAdapter, **flt: Any) -> list[MemoryFileVersion]:
    return unwrap(await store.query_file_versions(flt))


def _ids(versions: list[MemoryFileVersion]) -> list[str]:
    return [v.id for v in versions]


# --- cases ---------------------------------------------------------------------------------


@_case
async def case_add_and_read_round_trip(store: MemoryFileAdapter) -> None:
    text = "Allergic to peanuts.\nß ✓ 日本 \U0001f600\ttab\r\nend"
    full = _version(
        "/memories/people/ana.md",
        content=text,
        place={"thread_id": "thread_1", "entry_id": "entry_7"},
        renamed_from="/memories/ana.md",
        previous_id="file_before",
        author="user",
        scope={"agent_id": AGENT, "user_id": "ana", "project_id": "trip", "thread_id": "thread_1"},
        created_at=datetime(2026, 3, 1, 9, 30, 0, 123456, tzinfo=UTC),
    )
    empty = _version("/memories/empty.md", content="")
    gone = _version("/memories/gone.md", content=None)
    stored = await _add(store, full, empty, gone)
    _eq([v.sha256 for v in stored], [sha256_of(text), sha256_of(""), None], "sha256 of each version as returned")
    got = {v.id: v for v in await _query(store, within={"agent_id": AGENT})}
    first = got[full["id"]]
    _eq(first.content, text, "content")
    _eq(first.sha256, sha256_of(text), "sha256")
    _eq(first.size, len(text.encode()), "size in UTF-8 bytes")
    _eq(first.place.dump() if first.place else None, full["place"], "place")
    _eq(first.renamed_from, "/memories/ana.md", "renamed_from")
    _eq(first.previous_id, "file_before", "previous_id")
    _eq(first.author, "user", "author")
    _eq(first.scope.dump(), full["scope"], "scope")
    _eq(first.created_at, full["created_at"], "created_at to the microsecond")
    _eq(first.created_at.tzinfo is not None and first.created_at.utcoffset(), timedelta(0), "created_at in UTC")
    _eq((got[empty["id"]].content, got[empty["id"]].size), ("", 0), "an empty file keeps its empty text")
    deletion = got[gone["id"]]
    _eq((deletion.content, deletion.sha256, deletion.size, deletion.is_deletion), (None, None, 0, True), "deletion")
    _eq(deletion.redacted, None, "a new version is not redacted")


@_case
async def case_heads_follow_the_highest_sequence(store: MemoryFileAdapter) -> None:
    path = "/memories/log.md"
    versions = [_version(path, n, content=f"v{n}") for n in range(1, 6)]
    for version in versions:
        await _add(store, version)
    heads = await _heads(store, scope=ANA)
    _eq([(h.path, h.sequence, h.content) for h in heads], [(path, 5, "v5")], "the head is the newest version")
    bare = await _heads(store, scope=ANA, content=False)
    _eq(
        [(h.id, h.content, h.sha256, h.size) for h in bare],
        [(versions[-1]["id"], None, sha256_of("v5"), 2)],
        "content=False leaves the text out, sha256 and size stay",
    )
    _true(not bare[0].is_deletion, "a head read without its text is not a deletion")
    await _add(store, _version(path, 6, content=None))
    head = (await _heads(store, scope=ANA))[0]
    _eq((head.sequence, head.is_deletion), (6, True), "a deletion is a head too")
    _eq(len(await _query(store, scope=ANA, paths=[path])), 6, "history keeps every version")


@_case
async def case_a_lower_sequence_does_not_become_the_head(store: MemoryFileAdapter) -> None:
    path = "/memories/gap.md"
    await _add(store, _version(path, 1, content="one"), _version("/memories/other.md", 1))
    await _add(store, _version(path, 3, content="three"))
    await _add(store, _version(path, 2, content="two"))
    heads = {h.path: h.content for h in await _heads(store, scope=ANA)}
    _eq(heads, {path: "three", "/memories/other.md": heads.get("/memories/other.md")}, "heads")
    _eq(heads[path], "three", "the head stays at the highest sequence")


@_case
async def case_a_taken_sequence_is_a_memory_file_conflict(store: MemoryFileAdapter) -> None:
    path = "/memories/plan.md"
    await _add(store, _version(path, 1, content="first"))
    again = await store.add_file_versions([_version(path, 1, content="second")])
    message = _fails(again, "a second version at sequence 1", MemoryFileConflictError)
    _eq(getattr(again.error_type, "code", None), MEMORY_FILE_CONFLICT, "the error's code")
    _true(MEMORY_FILE_CONFLICT in message, f"the message names {MEMORY_FILE_CONFLICT}: {message}")
    try:
        again.unwrap()
    except MemoryFileConflictError as exc:
        _eq(exc.code, MEMORY_FILE_CONFLICT, "unwrap raises the conflict with its code")
    else:  # pragma: no cover - unwrap of a failed result raises
        raise AssertionError("unwrap should raise")
    # Another scope, or another path, is free at the same sequence.
    await _add(store, _version(path, 1, scope=SHARED), _version("/memories/plan2.md", 1))
    _eq([h.content for h in await _heads(store, scope=ANA, paths=[path])], ["first"], "the first version stands")


@_case
async def case_a_batch_is_all_or_nothing(store: MemoryFileAdapter) -> None:
    await _add(store, _version("/memories/b.md", 1, content="b1"))
    batch = [
        _version("/memories/a.md", 1, content="a1"),
        _version("/memories/c/d.md", 1, content="d1"),
        _version("/memories/b.md", 1, content="b again"),
    ]
    _fails(await store.add_file_versions(batch), "a batch with one taken sequence", MemoryFileConflictError)
    heads = await _heads(store, visible_to=ANA)
    _eq([(h.path, h.content) for h in heads], [("/memories/b.md", "b1")], "nothing of the failed batch stays")
    _eq(_ids(await _query(store, ids=[batch[0]["id"], batch[1]["id"]], within=SHARED)), [], "no version of it")
    taken = _version("/memories/e.md", 1, id=batch[2]["id"].replace("conf", "taken"))
    await _add(store, taken)
    dup = [_version("/memories/f.md", 1), _version("/memories/g.md", 1, id=taken["id"])]
    _fails(await store.add_file_versions(dup), "a taken id", ConflictError, mentions=taken["id"])
    _eq(await _heads(store, scope=ANA, paths=["/memories/f.md"]), [], "nothing of a batch with a taken id")
    written = await _add(store, *batch[:2], _version("/memories/b.md", 2, content="b2"))
    _eq([v.sequence for v in written], [1, 1, 2], "the same batch, corrected, is stored whole")


@_case
async def case_racing_writers_one_wins(store: MemoryFileAdapter) -> None:
    path = "/memories/race.md"
    await _add(store, _version(path, 1, content="start"))
    results = await asyncio.gather(
        *(store.add_file_versions([_version(path, 2, content=f"writer {n}")]) for n in range(10))
    )
    won = [r for r in results if r.success]
    _eq(len(won), 1, "exactly one writer adds version 2")
    for result in results:
        if not result.success:
            _fails(result, "a losing writer", MemoryFileConflictError)
    head = (await _heads(store, scope=ANA, paths=[path]))[0]
    assert won[0].data is not None
    _eq((head.sequence, head.id), (2, won[0].data[0].id), "the winner's version is the head")
    _eq(len(await _query(store, scope=ANA, paths=[path])), 2, "no loser's version was kept")


@_case
async def case_heads_by_scope_paths_and_prefix(store: MemoryFileAdapter) -> None:
    bo = {"agent_id": AGENT, "user_id": "bo"}
    other = {"agent_id": "other", "user_id": "ana"}
    thread = {"agent_id": AGENT, "user_id": "ana", "thread_id": "t1"}
    await _add(
        store,
        _version("/memories/a.md", scope=SHARED, content="shared"),
        _version("/memories/a.md", scope=ANA, content="ana's"),
        _version("/memories/a.md", scope=bo, content="bo's"),
        _version("/memories/a.md", scope=other, content="another agent's"),
        _version("/memories/a.md", scope=thread, content="in a thread"),
        _version("/memories/a_b/x.md", scope=ANA),
        _version("/memories/aXb/y.md", scope=ANA),
        _version("/memories/a%b/z.md", scope=ANA),
        _version("/memories/ab.md", scope=ANA),
        _version("/memories/a/deep/file.md", scope=ANA),
        _version("/memories/a", scope=SHARED),
    )
    seen = await _heads(store, visible_to=ANA, paths=["/memories/a.md"])
    _eq(sorted(h.content or "" for h in seen), ["ana's", "shared"], "visible_to reads the scopes it sees")
    seen = await _heads(store, visible_to=thread, paths=["/memories/a.md"])
    _eq(sorted(h.content or "" for h in seen), ["ana's", "in a thread", "shared"], "a thread sees its own too")
    exact = await _heads(store, scope=SHARED)
    _eq(sorted(h.path for h in exact), ["/memories/a", "/memories/a.md"], "scope reads exactly one scope")
    under = await _heads(store, visible_to=ANA, prefix="/memories/a_b")
    _eq([h.path for h in under], ["/memories/a_b/x.md"], "a prefix is literal: _ and % match themselves")
    under = await _heads(store, visible_to=ANA, prefix="/memories/a%b")
    _eq([h.path for h in under], ["/memories/a%b/z.md"], "a prefix is literal: % matches itself")
    under = await _heads(store, visible_to=ANA, prefix="/memories/a")
    _eq(
        [(h.path, h.scope_key.count("ana")) for h in under],
        [("/memories/a", 0), ("/memories/a/deep/file.md", 1)],
        "a prefix reads the path and what is under it, not its siblings",
    )
    everything = await _heads(store, visible_to=ANA, content=False)
    _eq(len(everything), 8, "every head the scope sees")
    _eq(
        [h.path for h in everything],
        sorted(h.path for h in everything),
        "heads come by path",
    )


@_case
async def case_query_versions_filters_and_order(store: MemoryFileAdapter) -> None:
    first = _version("/memories/notes.md", 1, place={"thread_id": "t1", "entry_id": "e1"})
    second = _version("/memories/notes.md", 2, place={"thread_id": "t1", "entry_id": "e2"})
    moved = _version("/memories/kept/notes.md", 1, renamed_from="/memories/notes.md", previous_id=second["id"])
    gone = _version("/memories/notes.md", 3, content=None)
    theirs = _version("/memories/notes.md", 1, scope={"agent_id": AGENT, "user_id": "bo"})
    project = _version("/memories/p.md", 1, scope={"agent_id": AGENT, "user_id": "ana", "project_id": "trip"})
    await _add(store, first)
    await _add(store, second)
    await _add(store, moved, gone)
    await _add(store, theirs, project)
    _eq(
        _ids(await _query(store, visible_to=ANA)),
        [first["id"], second["id"], moved["id"], gone["id"]],
        "visible_to, oldest first",
    )
    _eq(
        _ids(await _query(store, scope=ANA, paths=["/memories/notes.md"])),
        [first["id"], second["id"], gone["id"]],
        "paths",
    )
    _eq(_ids(await _query(store, scope=ANA, prefix="/memories/kept")), [moved["id"]], "prefix")
    _eq(_ids(await _query(store, within=SHARED, entry_ids=["e2", "e9"])), [second["id"]], "entry_ids (the place)")
    _eq(
        _ids(await _query(store, within=SHARED, renamed_from=["/memories/notes.md"])),
        [moved["id"]],
        "renamed_from",
    )
    _eq(_ids(await _query(store, within={"agent_id": AGENT, "user_id": "bo"})), [theirs["id"]], "within a user")
    _eq(
        _ids(await _query(store, within={"agent_id": AGENT, "project_id": "trip"})),
        [project["id"]],
        "within a project",
    )
    _eq(len(await _query(store, within=SHARED)), 6, "within the agent: every scope of it")
    _eq(await _query(store, within={"agent_id": "nobody"}), [], "another agent has none")
    _eq(_ids(await _query(store, within=SHARED, ids=[gone["id"], "file_missing"])), [gone["id"]], "ids")


@_case
async def case_redact_replaces_the_text_and_keeps_the_rest(store: MemoryFileAdapter) -> None:
    secret = _version("/memories/secret.md", 1, content="passport 123")
    later = _version("/memories/secret.md", 2, content="passport 123, visa", previous_id=secret["id"])
    gone = _version("/memories/secret.md", 3, content=None)
    await _add(store, secret)
    await _add(store, later)
    await _add(store, gone)
    at = T0 + timedelta(days=1)
    done = unwrap(
        await store.redact_file_versions(
            [later["id"], secret["id"], gone["id"], "file_missing"], {"at": at, "reason": "erasure"}
        )
    )
    _eq(_ids(done), [later["id"], secret["id"]], "the versions with text, in the order asked")
    for version in await _query(store, scope=ANA):
        if version.is_deletion:
            _eq(version.redacted, None, "a deletion has nothing to redact")
            continue
        _eq(version.content, REDACTED_TEXT, "the text is [redacted]")
        _eq(version.sha256, sha256_of(REDACTED_TEXT), "the sha256 follows the text")
        _eq(version.size, len(REDACTED_TEXT), "the size follows the text")
        _eq((version.redacted.at, version.redacted.reason) if version.redacted else None, (at, "erasure"), "redaction")
        _eq(version.path, "/memories/secret.md", "the path stays")
    again = await _query(store, ids=[later["id"]], within=SHARED)
    _eq(again[0].previous_id, secret["id"], "previous_id stays")
    _eq(again[0].sequence, 2, "the sequence stays")
    _eq(unwrap(await store.redact_file_versions([], {"at": at})), [], "nothing to redact")


@_case
async def case_returned_versions_are_copies(store: MemoryFileAdapter) -> None:
    stored = await _add(store, _version("/memories/copy.md", 1, content="kept"))
    stored[0].content = "changed by the caller"
    stored[0].scope.user_id = "bo"
    head = (await _heads(store, visible_to=ANA))[0]
    _eq((head.content, head.scope.user_id), ("kept", "ana"), "a returned version is a copy")
    head.content = "changed again"
    _eq((await _heads(store, visible_to=ANA))[0].content, "kept", "a read version is a copy")
    listed = await _query(store, scope=ANA)
    listed[0].path = "/memories/elsewhere.md"
    _eq((await _query(store, scope=ANA))[0].path, "/memories/copy.md", "a queried version is a copy")


@_case
async def case_bad_arguments_are_named(store: MemoryFileAdapter) -> None:
    cases: list[tuple[Any, str]] = [
        ([_version("/memories/a/")], "versions[0].path"),
        ([_version("/etc/passwd")], "versions[0].path"),
        ([_version("/memories/../x")], "versions[0].path"),
        ([_version("/memories/x", sha256="0" * 64)], "versions[0]"),
        ([_version("/memories/x", size=3)], "versions[0]"),
        ([_version("/memories/x", sequence=0)], "versions[0].sequence"),
        ([_version("/memories/x", content="a\x00b")], "versions[0]"),
        ([_version("/memories/x", content="x" * (MAX_FILE_BYTES + 1))], "versions[0]"),
        ([_version("/memories/x", author="robot")], "versions[0].author"),
        ([_version("/memories/x"), _version("/memories/x")], "versions[1].path"),
        ("not a list", "versions"),
    ]
    for versions, argument in cases:
        _fails(await store.add_file_versions(versions), f"add {argument}", InvalidArgumentError, mentions=argument)
    _eq(await _heads(store, visible_to=ANA), [], "nothing was written")
    filters: list[tuple[Any, str]] = [
        ({"paths": ["/memories/x"]}, "filter"),
        ({"visible_to": ANA, "scope": ANA}, "filter"),
        ({"visible_to": ANA, "paths": ["/memories/x"], "prefix": "/memories"}, "filter"),
        ({"visible_to": ANA, "paths": ["/memories/../x"]}, "filter.paths[0]"),
        ({"visible_to": ANA, "paths": []}, "filter.paths"),
        ({"visible_to": {"user_id": "ana"}}, "filter.visible_to.agent_id"),
    ]
    for flt, argument in filters:
        _fails(await store.find_file_heads(flt), f"heads {flt}", InvalidArgumentError, mentions=argument)
    _fails(
        await store.query_file_versions({"within": SHARED, "ids": [""]}), "ids", InvalidArgumentError, "filter.ids[0]"
    )
    _fails(await store.redact_file_versions("file_1", {"at": T0}), "ids", InvalidArgumentError, mentions="ids")
    _fails(await store.redact_file_versions(["file_1"], {"reason": "x"}), "at", InvalidArgumentError, "redaction.at")


@_case
async def case_many_versions_and_files(store: MemoryFileAdapter) -> None:
    batch = [_version(f"/memories/many/{n:04d}.md", 1, content=f"file {n}") for n in range(300)]
    await _add(store, *batch)
    for sequence in range(2, 12):
        await _add(store, _version("/memories/many/0007.md", sequence, content=f"edit {sequence}"))
    heads = await _heads(store, visible_to=ANA, prefix="/memories/many", content=False)
    _eq(len(heads), 300, "one head per path")
    _eq([h.path for h in heads][:2], ["/memories/many/0000.md", "/memories/many/0001.md"], "by path")
    seventh = await _heads(store, scope=ANA, paths=["/memories/many/0007.md"])
    _eq([(h.sequence, h.content) for h in seventh], [(11, "edit 11")], "the newest of eleven")
    _eq(len(await _query(store, scope=ANA, paths=["/memories/many/0007.md"])), 11, "its history")


__all__ = ["FileConformanceCase", "memory_file_adapter_conformance_cases"]
