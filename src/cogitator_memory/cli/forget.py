"""``cogitator-memory forget``: take a user, a thread or entries out of the store with what
memory derived from them (:class:`~cogitator_memory.cascade.MemoryCascade`).

``forget user USER``, ``forget thread THREAD`` and ``forget entries ID...`` (``--redact`` to
redact them in place instead, ``--keep-replies`` to leave the replies of a user message).
``--dry-run`` lists what would go and changes nothing. The cascade is the one every surface
uses (:meth:`MemoryCascade.delete_user <cogitator_memory.cascade.MemoryCascade.delete_user>` for
a user, their core facts included); on a SQLite file it turns ``secure_delete`` on and
checkpoints the WAL itself, so the forgotten text does not stay in free pages of the file.
``--config FILE`` forgets in the store a memory config names, any engine, through the cascade of
:class:`~cogitator_memory.runtime.Memory`.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from ..cascade import CascadeCounts, CascadePlan, MemoryCascade
from ..engines.sqlite.vectors import SQLiteEmbeddingAdapter
from ..errors import InvalidArgumentError, MemoryStoreError
from ..threads.base import BaseMemoryAdapter
from . import render
from .formats import CliError
from .memory_commands import config_flag, memory_config, open_memory
from .store import PROG, CliStore, need, open_store


def _plan_lines(plan: CascadePlan, what: str) -> list[str]:
    lines = [f"Dry run: forgetting {what} would take:"]
    if not plan.threads and not plan.entries:
        return [f"Dry run: nothing to forget for {what}.", *(f"Skipped: {s}" for s in plan.skipped)]
    for thread_id in plan.threads:
        lines.append(f"  thread {thread_id} (whole)")
    for thread_id, ids in plan.entries.items():
        lines.append(f"  {len(ids)} entr{'y' if len(ids) == 1 else 'ies'} of thread {thread_id}:")
        lines.extend(f"    {entry_id}" for entry_id in ids)
    lines.append("with the summaries, items, facts, graph, vectors and memory file versions standing on them.")
    lines.extend(f"Skipped: {s}" for s in plan.skipped)
    lines.append("Nothing was changed.")
    return lines


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


async def _sqlite_forget(args: argparse.Namespace, store: CliStore) -> tuple[CascadePlan | CascadeCounts, str]:
    """:func:`_forget` on a SQLite file: its threads, graph and vectors."""
    vectors = SQLiteEmbeddingAdapter(store=store)
    opened = await vectors.connect()
    if not opened.success:
        raise CliError(opened.error or "cannot open the vectors of the store")
    try:
        cascade = MemoryCascade(memory=store, graph=store, embeddings=vectors, reason=args.reason)
        return await _forget(args, store, cascade)
    finally:
        await vectors.disconnect()


async def _forget(
    args: argparse.Namespace, store: BaseMemoryAdapter, cascade: MemoryCascade, agents: list[str] | None = None
) -> tuple[CascadePlan | CascadeCounts, str]:
    """The plan (``--dry-run``) or the counts of forgetting what ``args`` names; and its name.
    ``agents``: searched besides ``--agent`` and the agents of the threads touched."""
    who = {"agent_ids": list(dict.fromkeys([*(args.agent or []), *(agents or [])]))}
    if args.target == "user":
        what = f"user {args.id}"
        if args.dry_run:
            return await cascade.plan_user(args.id), what
        return await cascade.delete_user(args.id, who), what
    if args.target == "thread":
        what = f"thread {args.id}"
        if need(await store.get_thread(args.id)) is None:
            raise CliError(f"thread not found: {args.id} (list the threads with '{PROG} threads')")
        if args.dry_run:
            return await cascade.plan_thread(args.id), what
        return await cascade.delete_thread(args.id, who), what
    ids = list(args.ids)
    for entry_id in ids:
        if need(await store.get_entry(entry_id)) is None:
            raise CliError(f"entry not found: {entry_id} (see the entry ids with '{PROG} show THREAD')")
    what = f"{len(ids)} entr{'y' if len(ids) == 1 else 'ies'}"
    if args.dry_run:
        return await cascade.plan_entries(ids, keep_replies=args.keep_replies), what
    if args.redact:
        redaction = {"at": datetime.now(UTC), "reason": args.reason}
        return await cascade.redact_entries(ids, redaction, who, keep_replies=args.keep_replies), what
    return await cascade.delete_entries(ids, who, keep_replies=args.keep_replies), what


async def _configured_forget(args: argparse.Namespace) -> tuple[CascadePlan | CascadeCounts, str]:
    """:func:`_forget` on the store of ``--config`` (not SQLite), with the memory's cascade."""
    memory = await open_memory(args)
    try:
        cascade = memory.cascade
        if cascade is None:  # Memory.open raises when the store is out of reach; a guard for mypy
            raise CliError("memory is disabled: its store could not be reached")
        cascade.reason = args.reason
        try:  # the config's agent too, as Memory's own cascade calls have it
            return await _forget(args, memory.adapter, cascade, [memory.agent_id])
        except (InvalidArgumentError, MemoryStoreError) as exc:
            raise CliError(str(exc)) from None
    finally:
        await memory.close()


async def cmd_forget(args: argparse.Namespace) -> int:
    """``forget user|thread|entries``: a cascade on the store, or its dry run."""
    from .commands import db_path

    path = db_path(args)
    if getattr(args, "config", None):
        config = memory_config(args)
        if config.adapter == "sqlite":
            path = config.sqlite_path()
        else:
            return _report(args, *await _configured_forget(args))
    async with open_store(path, create=False) as store:
        try:
            outcome, what = await _sqlite_forget(args, store)
        except (InvalidArgumentError, MemoryStoreError) as exc:
            raise CliError(str(exc)) from None
    return _report(args, outcome, what)


def _report(args: argparse.Namespace, outcome: CascadePlan | CascadeCounts, what: str) -> int:
    if isinstance(outcome, CascadePlan):
        if args.json:
            render.print_json(
                {"dry_run": True, "threads": outcome.threads, "entries": outcome.entries, "skipped": outcome.skipped}
            )
        else:
            render.write_lines([render.one_line(line) for line in _plan_lines(outcome, what)])
        return 0
    if args.json:
        render.print_json({"dry_run": False, **outcome.dump()})
    else:
        render.write_lines([render.one_line(line) for line in _count_lines(outcome, what)])
    return 0


def register(sub: Any, db: argparse.ArgumentParser) -> None:
    """Add ``forget`` to the subcommands ``sub`` (``db`` is the parser of ``--db``)."""
    forget = sub.add_parser(
        "forget",
        parents=[db],
        help="delete a user, a thread or entries with what memory derived from them (--dry-run lists it)",
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
        config_flag(parser, instead_of_db=True)
        parser.set_defaults(handler=cmd_forget, redact=False, keep_replies=False)


__all__ = ["cmd_forget", "register"]
