"""Cascade cases: what :class:`~cogitator_memory.cascade.MemoryCascade` must leave behind, run on
any store.

Each case takes a :class:`CascadeStores`: a connected thread store that keeps items and memory
files (every built-in one does), optionally an embedding store and a graph, and, for the
forgetting cases, ``raw`` (every byte the stores hold, read past the store's own calls: file
pages, tables, keys, collections, payloads) and ``settle`` (the engine's own means of dropping
old bytes, run before the scan). A forgetting case writes a secret into every kind of memory,
forgets it and looks for it in the raw data; it also looks for text that must stay, so a scan
that sees nothing cannot pass.

    @pytest.mark.parametrize("case", cascade_cases(), ids=str)
    async def test_cascade(case, stores):
        await case.run(stores)
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .. import clock
from ..cascade import MemoryCascade
from ..errors import InvalidArgumentError, MemoryStoreError, StoreUnavailableError
from ..files.paths import OBSERVATIONS_DIRECTORY, PLAYBOOK_PATH
from ..files.service import MemoryFiles
from ..items.service import MemoryItems
from ..result import err, unwrap

AGENT = "assistant"
DIMENSIONS = 8


@dataclass
class CascadeStores:
    """The stores a case runs on (see the module docstring)."""

    memory: Any
    embeddings: Any | None = None
    graph: Any | None = None
    raw: Callable[[], Awaitable[bytes]] | None = None
    settle: Callable[[], Awaitable[None]] | None = None


CascadeRun = Callable[[CascadeStores], Awaitable[None]]


@dataclass(frozen=True)
class CascadeCase:
    """One named check of the cascade; ``forgetting`` cases need ``raw``."""

    name: str
    run: CascadeRun
    forgetting: bool = False

    def __str__(self) -> str:
        return self.name


_CASES: list[CascadeCase] = []


def _case(forgetting: bool = False) -> Callable[[CascadeRun], CascadeRun]:
    def register(fn: CascadeRun) -> CascadeRun:
        _CASES.append(CascadeCase(fn.__name__.removeprefix("case_"), fn, forgetting))
        return fn

    return register


def cascade_cases(*, forgetting: bool | None = None) -> list[CascadeCase]:
    """Every cascade case in a stable order; ``forgetting=True`` only the raw-data scans,
    ``False`` only the others."""
    return [c for c in _CASES if forgetting is None or c.forgetting == forgetting]


# --- helpers -------------------------------------------------------------------------------------

_serial = itertools.count(1)


def _vector(n: int) -> list[float]:
    return [float((n + i) % 5 + 1) for i in range(DIMENSIONS)]


def _cascade(stores: CascadeStores) -> MemoryCascade:
    return MemoryCascade(memory=stores.memory, graph=stores.graph, embeddings=stores.embeddings)


async def _thread(stores: CascadeStores, user: str, **metadata: Any) -> str:
    thread_id = f"thread_c{next(_serial)}{secrets.token_hex(3)}"
    unwrap(await stores.memory.create_thread(AGENT, {"user_id": user, **metadata}, thread_id))
    return thread_id


async def _say(stores: CascadeStores, thread_id: str, role: str, text: str, **fields: Any) -> str:
    entry = unwrap(
        await stores.memory.add_entry({"thread_id": thread_id, "message": {"role": role, "content": text}, **fields})
    )
    if stores.embeddings is not None:
        unwrap(
            await stores.embeddings.add_embedding(
                {
                    "source_id": entry.id,
                    "source_type": "message",
                    "content": text,
                    "vector": _vector(entry.seq),
                    "metadata": {"agent_id": AGENT, "thread_id": thread_id, "index": "messages"},
                }
            )
        )
    return str(entry.id)


async def _item(
    stores: CascadeStores, user: str | None, value: str, quotes: list[tuple[str, str, str]], **kw: Any
) -> str:
    items = MemoryItems(adapter=stores.memory)
    scope: dict[str, Any] = {"agent_id": AGENT}
    if user is not None:
        scope["user_id"] = user
    item = await items.add(
        {
            "kind": kw.pop("kind", "fact"),
            "subject": kw.pop("subject", "user"),
            "attribute": kw.pop("attribute", f"attr{next(_serial)}"),
            "value": value,
            "evidence": [{"entry_id": e, "thread_id": t, "quote": q} for e, t, q in quotes],
            "trust": "user",
            "scope": scope,
            **kw,
        }
    )
    if stores.embeddings is not None:
        unwrap(
            await stores.embeddings.add_embedding(
                {"source_id": item.id, "source_type": "item", "content": value, "vector": _vector(3)}
            )
        )
    return str(item.id)


async def _exists(stores: CascadeStores, item_id: str) -> bool:
    return bool(unwrap(await stores.memory.get_items([item_id])))


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


@dataclass
class _Seeded:
    secret: str
    keep: str
    ana_thread: str
    bo_thread: str
    passport: str
    tea: str
    item: str


async def _seed(stores: CascadeStores) -> _Seeded:
    """Ana's thread and Bo's (where Ana wrote too), with a secret in every kind of memory."""
    secret = f"PASSPORT{secrets.token_hex(6).upper()}"
    keep = f"KEEPTEA{secrets.token_hex(4).upper()}"
    memory = stores.memory
    ana = await _thread(stores, "ana")
    passport = await _say(stores, ana, "user", f"My passport number is {secret}.", metadata={"user_id": "ana"})
    reply = await _say(stores, ana, "assistant", f"Noted, your passport is {secret}.")
    tea = await _say(stores, ana, "user", f"I drink {keep} every morning.", metadata={"user_id": "ana"})
    await _say(stores, ana, "assistant", f"{keep} it is.")
    unwrap(
        await memory.add_entry(
            {
                "thread_id": ana,
                "type": "compaction",
                "event": {"summary": f"Ana gave passport {secret}.", "first_kept_entry_id": tea},
            }
        )
    )
    item = await _item(stores, "ana", f"passport {secret}", [(passport, ana, secret)])
    lesson = await _item(
        stores, None, f"confirm documents like {secret}", [(reply, ana, secret)], kind="lesson", subject="documents"
    )
    unwrap(
        await memory.add_fact(
            {
                "agent_id": AGENT,
                "content": f"Ana's passport is {secret}",
                "metadata": {"user_id": "ana"},
                "evidence": [{"entry_id": passport, "thread_id": ana, "quote": secret}],
            }
        )
    )
    files = MemoryFiles(adapter=memory)
    place = {"thread_id": ana, "entry_id": passport, "branch": [passport]}
    await files.run(
        {"scope": {"agent_id": AGENT}, "place": place},
        {"command": "create", "path": "/memories/travel.md", "file_text": f"passport {secret}\n"},
    )
    writer = {"scope": {"agent_id": AGENT}, "author": "memory"}
    await files.put(writer, f"{OBSERVATIONS_DIRECTORY}/ana.md", f"[item:{item}] Ana's passport is {secret}\n")
    await files.put(writer, PLAYBOOK_PATH, f"- Check {secret} documents [lesson:{lesson}]\n- Be kind {keep}\n")
    if stores.graph is not None:
        node = unwrap(
            await stores.graph.add_node(
                {
                    "scope": {"agent_id": AGENT, "user_id": "ana"},
                    "type": "document",
                    "name": f"passport {secret}",
                    "evidence": [{"entry_id": passport, "thread_id": ana, "quote": secret}],
                }
            )
        )
        other = unwrap(
            await stores.graph.add_node({"scope": {"agent_id": AGENT}, "type": "drink", "name": f"tea {keep}"})
        )
        unwrap(  # shared, but standing only on Ana's message
            await stores.graph.add_node(
                {
                    "scope": {"agent_id": AGENT},
                    "type": "document",
                    "name": f"copy of {secret}",
                    "evidence": [{"entry_id": passport, "thread_id": ana, "quote": secret}],
                }
            )
        )
        unwrap(
            await stores.graph.add_edge(
                {
                    "scope": {"agent_id": AGENT},
                    "source_id": node.id,
                    "target_id": other.id,
                    "type": "relates",
                    "label": f"holder of {secret}",
                }
            )
        )
    bo = await _thread(stores, "bo", memory_user_ids=["ana"])
    await _say(stores, bo, "user", f"Bo asks about {keep}.", metadata={"user_id": "bo"})
    await _say(stores, bo, "assistant", f"{keep} is fine.")
    await _say(stores, bo, "user", f"Ana here: my passport is {secret}.", metadata={"user_id": "ana"})
    await _say(stores, bo, "assistant", f"Got {secret}, Ana.")
    return _Seeded(secret, keep, ana, bo, passport, tea, item)


async def _scan(stores: CascadeStores) -> bytes:
    assert stores.raw is not None, "a forgetting case needs CascadeStores.raw"
    if stores.settle is not None:
        await stores.settle()
    return await stores.raw()


async def _forgot(stores: CascadeStores, seeded: _Seeded) -> None:
    data = await _scan(stores)
    _check(seeded.keep.encode() in data, f"the scan must see what stays ({seeded.keep}): it reads nothing")
    where = data.find(seeded.secret.encode())
    _check(where < 0, f"the forgotten text is still in the raw data: ...{data[max(0, where - 80) : where + 80]!r}...")


# --- forgetting ----------------------------------------------------------------------------------


@_case(forgetting=True)
async def case_delete_user_leaves_nothing(stores: CascadeStores) -> None:
    seeded = await _seed(stores)
    before = await _scan(stores)
    _check(seeded.secret.encode() in before, "the scan must find the secret before the cascade")
    counts = await _cascade(stores).delete_user("ana", {"agent_ids": [AGENT]})
    _check(counts.threads == 1, f"ana's thread goes whole: {counts}")
    _check(unwrap(await stores.memory.get_thread(seeded.ana_thread)) is None, "ana's thread is gone")
    left = unwrap(await stores.memory.get_entries(seeded.bo_thread))
    _check(
        [e.message.text for e in left] == [f"Bo asks about {seeded.keep}.", f"{seeded.keep} is fine."],
        "bo keeps his own",
    )
    await _forgot(stores, seeded)


@_case(forgetting=True)
async def case_redact_entries_leaves_nothing(stores: CascadeStores) -> None:
    seeded = await _seed(stores)
    bo_copy = [e.id for e in unwrap(await stores.memory.get_entries(seeded.bo_thread)) if "Ana here" in e.message.text]
    counts = await _cascade(stores).redact_entries(
        [seeded.passport, *bo_copy], {"at": datetime.now(UTC), "reason": "the user asked"}, {"agent_ids": [AGENT]}
    )
    _check(counts.entries.redacted == 4, f"two messages and their replies are redacted: {counts}")
    _check(counts.summaries == 1, f"the summary quoting them goes: {counts}")
    _check(not await _exists(stores, seeded.item), "the item standing on the message is purged")
    files = MemoryFiles(adapter=stores.memory)
    shared = {"scope": {"agent_id": AGENT}}
    playbook = await files.read(shared, PLAYBOOK_PATH)
    _check(playbook is not None and seeded.keep in playbook.content, f"the other rule stays: {playbook}")
    _check(counts.playbook_rules == 1, f"the rule standing on the lesson goes: {counts}")
    _check(await files.read(shared, f"{OBSERVATIONS_DIRECTORY}/ana.md") is None, "the observation naming it is deleted")
    _check(await files.read(shared, "/memories/travel.md") is None, "the file written at the entry is deleted")
    texts = [e.message.text for e in unwrap(await stores.memory.get_entries(seeded.ana_thread))]
    _check(texts[0] == "[redacted]" and texts[2] == f"I drink {seeded.keep} every morning.", f"places kept: {texts}")
    await _forgot(stores, seeded)


# --- lineage ---------------------------------------------------------------------------------------


@_case()
async def case_delete_trims_and_purges(stores: CascadeStores) -> None:
    t = await _thread(stores, "cy")
    a = await _say(stores, t, "user", "I live in Porto.")
    await _say(stores, t, "assistant", "Porto, nice.")
    b = await _say(stores, t, "user", "Porto since 2019.")
    only = await _item(stores, "cy", "Porto", [(a, t, "Porto")])
    both = await _item(stores, "cy", "Porto 2019", [(a, t, "Porto"), (b, t, "since 2019")])
    counts = await _cascade(stores).delete_entries([a])
    _check(counts.entries.deleted == 2, f"the message and its reply go: {counts}")
    _check(counts.items.purged == 1 and counts.items.trimmed == 1, f"one purged, one trimmed: {counts}")
    _check(not await _exists(stores, only), "the item standing only on it is purged")
    kept = unwrap(await stores.memory.get_items([both]))[0]
    _check([e.entry_id for e in kept.evidence] == [b], f"the other keeps its other quote: {kept.evidence}")
    texts = [e.message.text for e in unwrap(await stores.memory.get_entries(t))]
    _check(texts == ["Porto since 2019."], f"the next user message stays: {texts}")
    if stores.embeddings is not None:
        _check(unwrap(await stores.embeddings.get_by_sources([a, only])) == [], "their vectors go")
    again = await _cascade(stores).delete_entries([a])
    _check(again.dump() == type(again)().dump(), f"run again, it finds nothing to do: {again}")


@_case()
async def case_keep_replies_and_forks(stores: CascadeStores) -> None:
    t = await _thread(stores, "di")
    a = await _say(stores, t, "user", "secret plan")
    r = await _say(stores, t, "assistant", "the plan")
    fork = unwrap(await stores.memory.fork_thread(t, r))
    copies = sorted(e.id for e in unwrap(await stores.memory.get_entries(fork.id)))
    plan = await _cascade(stores).plan_thread(t)
    _check(plan.threads == [t] and plan.entries == {fork.id: copies}, f"the dry run names the copies: {plan}")
    plan = await _cascade(stores).plan_entries([a])
    _check(plan.entry_count == 4, f"the message, its reply and both copies would go: {plan}")
    counts = await _cascade(stores).delete_entries([a], keep_replies=True)
    _check(counts.entries.deleted == 2, f"the entry and its copy in the fork go: {counts}")
    _check([e.id for e in unwrap(await stores.memory.get_entries(t))] == [r], "the reply stays")
    left = unwrap(await stores.memory.get_entries(fork.id))
    _check([e.message.text for e in left] == ["the plan"], f"the fork keeps the reply's copy: {left}")


@_case()
async def case_delete_thread_takes_its_scope(stores: CascadeStores) -> None:
    t = await _thread(stores, "ed")
    a = await _say(stores, t, "user", "hello")
    scoped = await _item(stores, None, "thread note", [], scope={"agent_id": AGENT, "thread_id": t})
    quoted = await _item(stores, "ed", "hello", [(a, t, "hello")])
    counts = await _cascade(stores).delete_thread(t)
    _check(counts.threads == 1 and counts.items.purged == 2, f"the thread and its items go: {counts}")
    _check(not await _exists(stores, scoped) and not await _exists(stores, quoted), "both items are gone")
    _check(unwrap(await stores.memory.get_thread(t)) is None, "the thread is gone")


@_case()
async def case_rewind_marks_items_stale(stores: CascadeStores) -> None:
    t = await _thread(stores, "fa")
    a = await _say(stores, t, "user", "I like jazz")
    await _say(stores, t, "assistant", "jazz noted")
    b = await _say(stores, t, "user", "I like rock")
    item = await _item(stores, "fa", "rock", [(b, t, "rock")])
    counts = await _cascade(stores).rewind(t, a)
    _check(counts.items.stale == 1, f"the item after the point goes stale: {counts}")
    stale = unwrap(await stores.memory.get_items([item]))[0]
    because = stale.metadata.get("stale_because", {})
    _check(
        stale.status == "stale" and because.get("reason") == "rewound" and because.get("to_entry_id") == a, f"{stale}"
    )
    _check(unwrap(await stores.memory.get_thread(t)).active_leaf_id == a, "the thread stands at the entry")
    again = await _cascade(stores).rewind(t, a)
    _check(again.items.stale == 0 and again.threads_changed == 0, "a thread there already is left as it is")


class _Interposed:
    """The store, with ``delete_entry`` going through ``before`` first (a failure, or a write
    made while the cascade runs)."""

    def __init__(self, inner: Any, before: Callable[[str], Awaitable[Any]]) -> None:
        self._inner = inner
        self._before = before

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def delete_entry(self, entry_id: str) -> Any:
        failed = await self._before(entry_id)
        if failed is not None:
            return failed
        return await self._inner.delete_entry(entry_id)


@_case()
async def case_a_failed_cascade_runs_again(stores: CascadeStores) -> None:
    t = await _thread(stores, "gu")
    a = await _say(stores, t, "user", "my pin is 1234")
    await _say(stores, t, "assistant", "pin noted")
    item = await _item(stores, "gu", "pin 1234", [(a, t, "1234")])
    calls = 0

    async def fail_first(_: str) -> Any:
        nonlocal calls
        calls += 1
        return err("the store went away", StoreUnavailableError) if calls == 1 else None

    flaky = _Interposed(stores.memory, fail_first)
    cascade = MemoryCascade(memory=flaky, items=stores.memory, files=stores.memory, embeddings=stores.embeddings)
    try:
        await cascade.delete_entries([a])
    except MemoryStoreError as exc:
        _check("went away" in str(exc), f"the store's error is raised: {exc}")
    else:
        raise AssertionError("a cascade whose store fails raises")
    _check(not await _exists(stores, item), "derived memory went before the entries")
    _check(len(unwrap(await stores.memory.get_entries(t))) == 2, "the entries are still there")
    counts = await cascade.delete_entries([a])
    _check(counts.entries.deleted == 2, f"run again, it finishes: {counts}")
    _check(unwrap(await stores.memory.get_entries(t)) == [], "the entries are gone")


@_case()
async def case_a_second_look_takes_what_was_written_meanwhile(stores: CascadeStores) -> None:
    t = await _thread(stores, "ha")
    a = await _say(stores, t, "user", "I was born in Faro")
    late: list[str] = []

    async def extract_meanwhile(entry_id: str) -> None:
        if not late:  # an extractor that read the entry writes its item while the cascade runs
            late.append(await _item(stores, "ha", "Faro", [(entry_id, t, "Faro")], attribute="born"))

    cascade = MemoryCascade(memory=_Interposed(stores.memory, extract_meanwhile), items=stores.memory)
    counts = await cascade.delete_entries([a])
    _check(bool(late) and not await _exists(stores, late[0]), "the item written meanwhile is purged")
    _check(counts.items.purged == 1, f"{counts}")


@_case()
async def case_a_refused_rewind_leaves_items(stores: CascadeStores) -> None:
    t = await _thread(stores, "ib")
    a = await _say(stores, t, "user", "tea")
    b = await _say(stores, t, "user", "coffee")
    item = await _item(stores, "ib", "coffee", [(b, t, "coffee")])
    other = await _thread(stores, "ib")
    elsewhere = await _say(stores, other, "user", "water")
    try:
        await _cascade(stores).rewind(t, elsewhere)
    except MemoryStoreError:
        pass
    else:
        raise AssertionError("a rewind to an entry off the branch is refused")
    _check(unwrap(await stores.memory.get_items([item]))[0].status != "stale", "the item is as it was")
    _check(unwrap(await stores.memory.get_thread(t)).active_leaf_id == b, "the thread did not move")
    _check((await _cascade(stores).rewind(t, a)).items.stale == 1, "a rewind on the branch marks it")


# --- someone else's bad data -----------------------------------------------------------------------

#: Values that are not ids (empty, a tab, over 256 characters), as a thread's metadata may hold
#: them from before its writes were checked.
NOT_IDS: tuple[str, ...] = ("", "\t", "x" * 300)


async def _refused(call: Awaitable[Any], argument: str) -> None:
    try:
        unwrap(await call)
    except InvalidArgumentError as exc:
        _check(f"'{argument}'" in str(exc), f"the error names {argument}: {exc}")
    else:
        raise AssertionError(f"a write of {argument} that is not an id is refused")


@_case()
async def case_bad_ids_of_others_do_not_stop_erasure(stores: CascadeStores) -> None:
    memory = stores.memory
    # the keys the package reads are checked when written, the error naming the key
    for bad in NOT_IDS:
        for key in ("memory_forks", "memory_agent_ids", "memory_user_ids"):
            await _refused(memory.create_thread(AGENT, {key: ["fine", bad]}), f"metadata.{key}[1]")
        await _refused(memory.create_thread(AGENT, {"user_id": bad}), "metadata.user_id")
    await _refused(memory.create_thread(AGENT, {"memory_forks": "one"}), "metadata.memory_forks")
    ana = await _thread(stores, "ana")
    await _say(stores, ana, "user", "Ana's own words.", metadata={"user_id": "ana"})
    await _refused(memory.update_thread(ana, {"memory_agent_ids": [NOT_IDS[0]]}), "metadata.memory_agent_ids[0]")
    # Bo's thread lists Ana and holds ids that are not ids, written past the check (an older
    # version, a hand edit): the store's own write primitive, when it has one
    bo = await _thread(stores, "bo", memory_user_ids=["ana"], memory_agent_ids=["helper"])
    kept = await _say(stores, bo, "user", "Bo's own words.", metadata={"user_id": "bo"})
    said = await _say(stores, bo, "user", "Ana wrote this in Bo's thread.", metadata={"user_id": "ana"})
    helper = MemoryItems(adapter=memory)
    derived_item = await helper.add(
        {
            "kind": "fact",
            "subject": "ana",
            "attribute": "wrote",
            "value": "in Bo's thread",
            "evidence": [{"entry_id": said, "thread_id": bo, "quote": "in Bo's thread"}],
            "trust": "user",
            "scope": {"agent_id": "helper"},
        }
    )
    write = getattr(memory, "_upsert_thread", None)
    if not callable(write):
        return  # a store without the primitive cannot hold such data through its calls
    planted = {"memory_forks": [*NOT_IDS, 7], "memory_agent_ids": [*NOT_IDS, "helper"]}
    await write(bo, AGENT, planted, clock.now())
    _check(unwrap(await memory.get_thread(bo)).metadata["memory_forks"][0] == "", "the bad ids are stored")

    plan = await _cascade(stores).plan_user("ana")
    _check(plan.threads == [ana] and plan.entries == {bo: [said]}, f"the dry run goes past them: {plan}")
    counts = await _cascade(stores).delete_user("ana")
    _check(counts.threads == 1 and counts.entries.deleted == 2, f"Ana's thread and her message go: {counts}")
    _check(unwrap(await memory.get_thread(ana)) is None, "Ana's thread is gone")
    left = [e.id for e in unwrap(await memory.get_entries(bo))]
    _check(left == [kept], f"Bo keeps his own message, Ana's goes: {left}")
    _check(not await _exists(stores, derived_item.id), "the agents listed beside the bad ids are still searched")
    skipped = " ".join(counts.skipped)
    for key in ("memory_forks", "memory_agent_ids"):
        _check(f"thread {bo}: metadata.{key}[0]" in skipped, f"the counts say what was skipped ({key}): {skipped}")
    _check(len(counts.skipped) == 7, f"each unreadable id is reported once: {counts.skipped}")
    _check("x" * 300 not in skipped, "the report does not repeat the bad values")
    # the other erasures go past them too
    counts = await _cascade(stores).delete_thread(bo)
    _check(counts.threads == 1 and len(counts.skipped) == 7, f"Bo's thread goes: {counts}")


__all__ = ["AGENT", "DIMENSIONS", "CascadeCase", "CascadeStores", "cascade_cases"]
