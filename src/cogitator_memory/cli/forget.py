"""``cogitator-memory forget``: take a user, a thread or entries out of the store with what
memory derived from them.

``forget user USER``, ``forget thread THREAD`` and ``forget entries ID...`` (``--redact`` to
redact them in place instead, ``--keep-replies`` to leave the replies of a user message), and
``forget facts QUERY`` (the facts ``remember`` saved, by the ``forget`` tool's rule).

One plan, shown then carried out: both ``--dry-run`` and the real run first compute the same
plan (:func:`cogitator_memory.cascade.plan.forget_plan`: the threads, entries, memory items,
core facts, facts, graph nodes and edges, entities, vectors and files the forget takes, with the
cascade's own finders and rules) and print it; the dry run stops there, the real run then
forgets through :class:`~cogitator_memory.runtime.Memory`, the one cascade every surface uses
(:meth:`Memory.forget_user <cogitator_memory.runtime.Memory.forget_user>`, ``delete_thread``,
``delete_entries``, ``redact_entries``), on the store every command works on (:mod:`.where`),
any engine, and prints what it took. On a SQLite file the cascade turns ``secure_delete`` on
and checkpoints the WAL, so the forgotten text does not stay in free pages of the file.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import clock
from ..cascade import CascadeCounts
from ..cascade.plan import forget_plan
from ..errors import InvalidArgumentError, MemoryStoreError
from ..runtime.memory import Memory
from . import render
from .formats import CliError
from .memory_commands import config_flag, memory_config, open_memory, who_flags
from .store import PROG, check_database_file, need
from .where import store_label

#: The parts of a plan, in the order they are printed: (key of ``counts``, one, many).
_PARTS = (
    ("summaries", "summary", "summaries"),
    ("items", "memory item", "memory items"),
    ("items_trimmed", "memory item losing quotes", "memory items losing quotes"),
    ("core_facts", "core fact", "core facts"),
    ("facts", "fact", "facts"),
    ("facts_trimmed", "fact losing quotes", "facts losing quotes"),
    ("graph_nodes", "graph node", "graph nodes"),
    ("graph_edges", "graph edge", "graph edges"),
    ("graph_trimmed", "graph record losing quotes", "graph records losing quotes"),
    ("entities", "entity", "entities"),
    ("vectors", "vector", "vectors"),
    ("file_versions", "memory file version", "memory file versions"),
    ("files", "memory file", "memory files"),
)


class NoEmbedder:
    """The embedding service ``forget`` opens a SQLite file with: the vectors in the file are
    found and deleted whatever embedder wrote them (of any dimensions, so a config whose
    embedder differs does not stop a forget), and nothing is embedded."""

    dimensions: int | None = None
    #: Tells the message index not to embed what waits for a vector (another process will).
    embeds = False

    async def embed(self, text: str) -> list[float]:
        """Refused: a forget embeds nothing."""
        raise MemoryStoreError("forget embeds nothing")

    async def embed_batch(self, texts: list[str]) -> list[list[float]]:
        """Refused: a forget embeds nothing."""
        raise MemoryStoreError("forget embeds nothing")


def _what(args: argparse.Namespace) -> str:
    if args.target == "entries":
        return f"{len(args.ids)} entr{'y' if len(args.ids) == 1 else 'ies'}"
    return f"{args.target} {args.id}"


def is_empty(plan: dict[str, Any]) -> bool:
    """Whether the plan takes nothing at all."""
    return not plan["threads"] and not plan["entries"] and not any(plan["counts"].values())


def plan_lines(plan: dict[str, Any], what: str, *, dry_run: bool) -> list[str]:
    """The plan as text: what goes, thread by thread, then what memory derived from it."""
    if is_empty(plan):
        head = "Dry run: nothing" if dry_run else "Nothing"
        return [f"{head} to forget for {what}.", *(f"Skipped: {s}" for s in plan["skipped"])]
    lines = [f"Dry run: forgetting {what} would take:" if dry_run else f"Forgetting {what} takes:"]
    for thread_id in plan["threads"]:
        lines.append(f"  thread {thread_id} (whole)")
    for thread_id, ids in plan["entries"].items():
        lines.append(f"  {len(ids)} entr{'y' if len(ids) == 1 else 'ies'} of thread {thread_id}:")
        lines.extend(f"    {entry_id}" for entry_id in ids)
    counts = plan["counts"]
    for key, one, many in _PARTS:
        number = counts.get(key, 0)
        if number:
            lines.append(f"  {number} {one if number == 1 else many}{_examples(plan, key)}")
    if plan.get("recall_index"):
        lines.append("  and the user's records in the recall index")
    lines.extend(f"Skipped: {s}" for s in plan["skipped"])
    if dry_run:
        lines.append("Nothing was changed.")
    return lines


def _examples(plan: dict[str, Any], key: str) -> str:
    """A few of the things of a part, by name (core fact keys, fact texts, graph node names)."""
    rows: list[str] = []
    if key == "core_facts":
        rows = [f"{r['core_key']}={r['value']}" for r in plan["core_facts"] if r["action"] == "delete"]
    elif key in ("facts", "items"):
        rows = [str(r["value"]) for r in plan[key] if r["action"] == "delete"]
    elif key == "graph_nodes":
        rows = [str(n["name"]) for n in plan["graph_nodes"]]
    if not rows:
        return ""
    shown = ", ".join(render.one_line(r)[:60] for r in rows[:3])
    return f": {shown}{', ...' if len(rows) > 3 else ''}"


def _count_lines(counts: CascadeCounts, what: str) -> list[str]:
    data = counts.dump()
    parts = [
        f"threads deleted: {data['threads']}",
        f"entries deleted: {data['entries']['deleted']}, redacted: {data['entries']['redacted']}",
        f"summaries: {data['summaries']}",
        f"items purged: {data['items']['purged']}, trimmed: {data['items']['trimmed']}",
        f"facts deleted: {data['facts']['deleted']}, trimmed: {data['facts']['trimmed']}",
        f"graph nodes: {data['graph']['nodes']}, edges: {data['graph']['edges']}, entities: {data['entities']}",
        f"vectors: {data['vectors']}",
        f"file versions redacted: {data['file_versions']}, files deleted: {data['files']}",
        f"playbook rules: {data['playbook_rules']}",
    ]
    skipped = [f"  skipped: {s}" for s in counts.skipped]
    return [f"Forgot {what}:", *(f"  {p}" for p in parts), *skipped]


def _agents(args: argparse.Namespace, memory: Memory) -> list[str]:
    """The agents the forget goes through besides those of the threads it touches: the config's
    (as :class:`Memory`'s own calls have it) and every ``--agent``."""
    return list(dict.fromkeys([memory.agent_id, *(args.agent or [])]))


async def _check_target(args: argparse.Namespace, memory: Memory) -> None:
    """A thread or entry the command names must be there (a user need not have a thread)."""
    if args.target == "thread" and need(await memory.adapter.get_thread(args.id)) is None:
        raise CliError(f"thread not found: {args.id} (list the threads with '{PROG} threads')")
    if args.target == "entries":
        for entry_id in args.ids:
            if need(await memory.adapter.get_entry(entry_id)) is None:
                raise CliError(f"entry not found: {entry_id} (see the entry ids with '{PROG} show THREAD')")


async def make_plan(args: argparse.Namespace, memory: Memory) -> dict[str, Any]:
    """The plan of the forget ``args`` names (the dry run's and the real run's, the same call)."""
    await memory.flush()  # what was queued is in the indexes, as the forget itself sees them
    cascade = memory.cascade
    if cascade is None:  # Memory.open raises when the store is out of reach; a guard for mypy
        raise CliError("memory is disabled: its store could not be reached")
    await _check_target(args, memory)
    target, value = {
        "user": ("user_id", getattr(args, "id", None)),
        "thread": ("thread_id", getattr(args, "id", None)),
    }.get(args.target, ("entry_ids", list(getattr(args, "ids", []))))
    return await forget_plan(
        cascade,
        target,
        value,
        agent_id=_agents(args, memory),
        keep_replies=args.keep_replies,
        recall_index=memory.indexer is not None,
    )


async def carry_out(args: argparse.Namespace, memory: Memory) -> CascadeCounts:
    """Forget what ``args`` names through :class:`Memory` (its calls take one agent, the
    config's). With ``--agent``, the same cascade is first run with every agent of
    :func:`_agents` (as Memory's own call, after its indexes are flushed), and a user is then
    forgotten through :meth:`Memory.forget_user` as well, which finds nothing more in the
    cascade and clears the user's records in the recall index."""
    agents = _agents(args, memory)
    reason = args.reason
    if memory.cascade is not None:
        memory.cascade.reason = reason
    counts = CascadeCounts()
    if len(agents) > 1 and memory.cascade is not None:
        await memory.flush()
        who = {"agent_ids": agents}
        cascade = memory.cascade
        if args.target == "user":
            counts.add(await cascade.delete_user(args.id, who))
        elif args.target == "thread":
            return await cascade.delete_thread(args.id, who)
        elif args.redact:
            redaction = {"at": clock.now(), "reason": reason}
            return await cascade.redact_entries(args.ids, redaction, who, keep_replies=args.keep_replies)
        else:
            return await cascade.delete_entries(args.ids, who, keep_replies=args.keep_replies)
    if args.target == "user":
        counts.add(await memory.forget_user(args.id))
        return counts
    if args.target == "thread":
        return await memory.delete_thread(args.id)
    if args.redact:
        return await memory.redact_entries(args.ids, reason=reason, keep_replies=args.keep_replies)
    return await memory.delete_entries(args.ids, keep_replies=args.keep_replies)


async def cmd_forget(args: argparse.Namespace) -> int:
    """``forget user|thread|entries``: the plan, then (unless ``--dry-run``) the forget itself."""
    config = memory_config(args)
    if config.adapter == "sqlite":
        check_database_file(config.sqlite_path(), create=False)  # forget never makes a store
    what = _what(args)
    keeps_vectors_in_file = config.adapter == "sqlite" and config.vectors is None
    memory = await open_memory(args, embedding_service=NoEmbedder() if keeps_vectors_in_file else None)
    try:
        try:
            plan = await make_plan(args, memory)
            if args.dry_run:
                return _report_plan(args, plan, what)
            if not args.json:
                _write(plan_lines(plan, what, dry_run=False))
            counts = await carry_out(args, memory)
        except (InvalidArgumentError, MemoryStoreError) as exc:
            raise CliError(str(exc)) from None
    finally:
        await memory.close()
    if args.json:
        render.print_json({"dry_run": False, "store": store_label(args, config), "plan": plan, **counts.dump()})
    else:
        _write(_count_lines(counts, what))
    return 0


async def cmd_forget_facts(args: argparse.Namespace) -> int:
    """``forget facts QUERY``: the facts ``remember`` saved that match the query, and the core
    facts holding its words, deleted by :meth:`Memory.forget
    <cogitator_memory.runtime.Memory.forget>` (the ``forget`` tool of MCP and Python: the same
    refusals, and a broad query deletes nothing without ``--all``; exit status 1 then)."""
    memory = await open_memory(args)
    try:
        answer = await memory.forget(args.query, take_all=args.all, user_id=args.user, agent_id=args.agent)
    except (InvalidArgumentError, MemoryStoreError) as exc:
        raise CliError(str(exc)) from None
    finally:
        await memory.close()
    broad = answer.get("too_broad")
    if args.json:
        render.print_json(answer)
        return 1 if broad else 0
    if broad:
        lines = [str(answer.get("message", "nothing was deleted: the query is too broad")), "It matches:"]
        lines += [f"  {fact}" for fact in broad.get("facts", [])]
        lines += [f"  core fact {key}" for key in broad.get("core_fact_keys", [])]
        lines.append(f"Run again with --all to delete them all, or name the fact more precisely ({PROG} recall QUERY).")
        _write(lines)
        return 1
    facts, keys = answer.get("facts", []), answer.get("core_fact_keys", [])
    if not facts and not keys:
        _write([f"nothing matched {args.query!r}: no fact was deleted"])
        return 0
    count = len(facts) + len(keys)
    lines = [f"Forgot {count} fact{'' if count == 1 else 's'}:"]
    lines += [f"  {fact}" for fact in facts] + [f"  core fact {key}" for key in keys]
    _write(lines)
    return 0


def _write(lines: list[str]) -> None:
    """Print ``lines``, each made safe for the terminal on one line, its indentation kept."""
    out = []
    for line in lines:
        indent = len(line) - len(line.lstrip(" "))
        out.append(" " * indent + render.one_line(line))
    render.write_lines(out)


def _report_plan(args: argparse.Namespace, plan: dict[str, Any], what: str) -> int:
    if args.json:
        render.print_json({"dry_run": True, **plan})
    else:
        _write(plan_lines(plan, what, dry_run=True))
    return 0


def register(sub: Any, db: argparse.ArgumentParser) -> None:
    """Add ``forget`` to the subcommands ``sub`` (``db`` is the parser of ``--db``)."""
    forget = sub.add_parser(
        "forget",
        parents=[db],
        help="delete a user, a thread or entries with what memory derived from them (--dry-run lists it), or facts saved with remember",
        description="Delete a user, a thread or entries together with the summaries, items, facts, graph, "
        f"vectors and memory file versions standing on them. Start with --dry-run. Example: {PROG} forget "
        "user ana --dry-run",
    )
    targets = forget.add_subparsers(dest="target", metavar="WHAT", required=True, parser_class=type(forget))
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dry-run", action="store_true", help="list what would go and change nothing")
    common.add_argument("--json", action="store_true", help="print JSON (the plan, or the counts)")
    common.add_argument(
        "--agent", metavar="ID", action="append", help="an agent whose memory to go through as well; repeatable"
    )
    common.add_argument("--reason", metavar="TEXT", help="why, kept with the redactions")
    user = targets.add_parser("user", parents=[db, common], help="every thread of a user and what they wrote elsewhere")
    user.add_argument("id", metavar="USER", help="the user id (metadata user_id of their threads)")
    thread = targets.add_parser("thread", parents=[db, common], help="a thread whole, with the copies in its forks")
    thread.add_argument("id", metavar="THREAD", help="the thread id")
    entries = targets.add_parser("entries", parents=[db, common], help="entries, with their replies and copies")
    entries.add_argument("ids", metavar="ID", nargs="+", help="the entry ids")
    entries.add_argument("--redact", action="store_true", help="redact them in place instead of deleting them")
    entries.add_argument("--keep-replies", action="store_true", help="leave the replies of a user message")
    for parser in (user, thread, entries):
        config_flag(parser)
        parser.set_defaults(handler=cmd_forget, redact=False, keep_replies=False)
    facts = targets.add_parser(
        "facts",
        parents=[db],
        help="the facts saved with 'remember' that match a query (as the forget tool does)",
        description="Delete the facts saved with 'remember' whose text holds every word of QUERY, and the core "
        "facts holding them, as the MCP and Python forget tool does: a query matching many facts deletes "
        f'nothing without --all. Example: {PROG} forget facts "vegetarian" --user ada',
    )
    facts.add_argument("query", metavar="QUERY", help="the words of the facts to forget")
    facts.add_argument("--all", action="store_true", help="delete every fact the query matches, even many")
    who_flags(facts)
    facts.add_argument("--json", action="store_true", help="print the tool's answer as JSON")
    config_flag(facts)
    facts.set_defaults(handler=cmd_forget_facts)


__all__ = ["carry_out", "cmd_forget", "cmd_forget_facts", "is_empty", "make_plan", "plan_lines", "register"]
