"""The commands of ``cogitator-memory``: parsing, running them on the SQLite store, errors.

Every command works on one SQLite file: ``--db PATH``, else ``$COGITATOR_MEMORY_DB``, else
``cogitator-memory.db`` in the current folder. A user error prints one line starting with
``cogitator-memory: error:`` and exits 1 (2 for a bad command line), without a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from .. import __version__
from ..clock import frozen_clock
from ..engines.sqlite.threads import DEFAULT_PATH, SQLiteAdapter
from ..result import MemoryResult
from ..threads import tree
from ..threads.records import MemoryEntry, NewMemoryEntry, Thread
from . import render
from .demo import DEMO_FORK, DEMO_THREAD, write_demo
from .formats import CliError, ExportedThread, entry_json, export_document, openai_messages_to_entries, read_import_file

PROG = "cogitator-memory"
DB_ENV = "COGITATOR_MEMORY_DB"
DEBUG_ENV = "COGITATOR_MEMORY_DEBUG"
DEFAULT_AGENT = "cli"

T = TypeVar("T")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (a :class:`CliError` with exit status 2)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')", code=2)


# --- plumbing -----------------------------------------------------------------------------


def db_path(args: argparse.Namespace) -> str:
    """The database file: ``--db``, else ``$COGITATOR_MEMORY_DB``, else the default file."""
    chosen = getattr(args, "db", None)
    if chosen:
        return str(chosen)
    return os.environ.get(DB_ENV) or DEFAULT_PATH


def command_hint(args: argparse.Namespace, *words: str) -> str:
    """A command line to run next, with ``--db`` when the user gave one."""
    parts = [PROG, *words]
    if getattr(args, "db", None):
        parts += ["--db", str(args.db)]
    return shlex.join(parts)


@asynccontextmanager
async def open_store(path: str, *, create: bool) -> AsyncIterator[SQLiteAdapter]:
    """The connected SQLite store at ``path``; with ``create=False`` a missing file is an error."""
    target = path
    if not (path == ":memory:" or path.startswith("file:")):
        file = Path(path).expanduser()
        target = str(file)
        if file.is_dir():
            raise CliError(f"{path} is a folder, not a database file (pass --db PATH)")
        if not create and not file.exists():
            raise CliError(
                f"no database at {path}: create one with '{PROG} demo' or '{PROG} import FILE', "
                f"or point to one with --db PATH or ${DB_ENV}"
            )
    store = SQLiteAdapter(path=target)
    opened = await store.connect()
    if not opened.success:
        raise CliError(opened.error or f"cannot open {path}")
    try:
        yield store
    finally:
        await store.disconnect()


def need(result: MemoryResult[T]) -> T:
    """The data of a successful result; a failed one becomes a :class:`CliError` with its message."""
    if not result.success:
        raise CliError(result.error or "the store failed")
    return result.data  # type: ignore[return-value]


async def require_thread(store: SQLiteAdapter, thread_id: str, path: str) -> Thread:
    """The thread, or an error naming the file and how to list what is there."""
    thread = need(await store.get_thread(thread_id))
    if thread is None:
        raise CliError(f"thread not found: {thread_id} (in {path}; list the threads with '{PROG} threads')")
    return thread


async def all_entries(store: SQLiteAdapter, thread_id: str) -> list[MemoryEntry]:
    """Every entry of every branch, events and tool data included, in ``seq`` order."""
    return need(await store.get_entries(thread_id=thread_id, types="all", include_tool_calls=True))


def parse_meta(items: Sequence[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as a dict; VALUE is JSON when it parses (no NaN), else a string."""
    wanted: dict[str, Any] = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"argument --meta: expected KEY=VALUE, got {item!r}", code=2)
        try:
            value: Any = json.loads(raw, parse_constant=_no_constant)
        except ValueError:
            value = raw
        wanted[key.strip()] = value
    return wanted


def _no_constant(name: str) -> NoReturn:
    raise ValueError(name)


def json_text(data: Any) -> str:
    """``data`` as indented JSON, non-ASCII escaped when stdout cannot encode it."""
    plain = render.glyphs_for(sys.stdout) is render.ASCII
    return json.dumps(data, indent=2, ensure_ascii=plain) + "\n"


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON."""
    sys.stdout.write(json_text(data))


def page_size(text: str) -> int:
    """``--limit``: an int from 1 to 1000."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"must be from 1 to 1000, got {value}")
    return value


def run(coroutine: Awaitable[int]) -> int:
    """Run a command's coroutine to its exit status."""

    async def wrapper() -> int:
        return await coroutine

    return asyncio.run(wrapper())


# --- commands -----------------------------------------------------------------------------


async def cmd_demo(args: argparse.Namespace) -> int:
    """``demo``: write the demo conversation and print its tree and active path."""
    path = db_path(args)
    g, width = render.glyphs_for(sys.stdout), render.terminal_width()
    async with open_store(path, create=True) as store:
        demo = await write_demo(store)
        entries = await all_entries(store, DEMO_THREAD)
        fork_entries = await all_entries(store, DEMO_FORK)
        path_entries = need(await store.get_path(thread_id=DEMO_THREAD, types="all", include_tool_calls=True))
    again = " (replacing the demo threads of an earlier run)" if demo.replaced else ""
    tail = render.short_ids(e.id for e in entries)[demo.alternative.id]
    lines = [
        f"Wrote a demo conversation to {path}{again}.",
        "",
        *render.thread_header(demo.thread, entries, g, width),
        "",
        *render.tree_lines(demo.thread, entries, g, width),
        "",
        render.legend(g),
        "",
        *render.prose(
            f"The second reply ({tail}) was written with parent_id and activate=False: it waits on a branch "
            "of its own while the conversation goes on after the first. The active path, which the agent's "
            "next prompt is built from:",
            width,
        ),
        "",
        *render.path_lines(path_entries, g, width),
        "",
        *render.prose("Then the second reply was forked into a thread of its own, which goes on by itself:", width),
        "",
        *render.thread_header(demo.fork, fork_entries, g, width)[:1],
        *render.tree_lines(demo.fork, fork_entries, g, width),
        "",
        "Next:",
        f"  {command_hint(args, 'threads')}",
        f"  {command_hint(args, 'show', DEMO_THREAD)}",
        f"  {command_hint(args, 'export', DEMO_THREAD, '--out', 'trip.json')}",
    ]
    render.write_lines(lines)
    return 0


async def cmd_threads(args: argparse.Namespace) -> int:
    """``threads``: one page of threads, the most recently updated first."""
    path = db_path(args)
    wanted = parse_meta(args.meta)
    async with open_store(path, create=False) as store:
        page = need(
            await store.list_threads(agent_id=args.agent, metadata=wanted or None, limit=args.limit, cursor=args.cursor)
        )
    if args.json:
        print_json({"threads": [t.dump() for t in page.threads], "next_cursor": page.next_cursor})
        return 0
    g, width = render.glyphs_for(sys.stdout), render.terminal_width()
    if not page.threads:
        filtered = args.agent is not None or bool(wanted) or args.cursor is not None
        render.write_lines([f"No threads {'match' if filtered else 'yet'} in {path}."])
        return 0
    lines = render.threads_table(page.threads, g, width)
    if page.next_cursor:
        words = ["threads"]
        if args.agent is not None:
            words += ["--agent", args.agent]
        for item in args.meta or ():
            words += ["--meta", item]
        if args.limit != 50:
            words += ["--limit", str(args.limit)]
        lines += ["", f"More threads: {command_hint(args, *words, '--cursor', page.next_cursor)}"]
    render.write_lines(lines)
    return 0


async def cmd_show(args: argparse.Namespace) -> int:
    """``show THREAD``: the tree of a thread, every branch, the active path marked."""
    path = db_path(args)
    async with open_store(path, create=False) as store:
        thread = await require_thread(store, args.thread, path)
        entries = await all_entries(store, thread.id)
    by_id = {e.id: e for e in entries}
    active = render.active_path_ids(thread, by_id)
    if args.json:
        print_json({"thread": thread.dump(), "entries": [entry_json(e) for e in entries], "active_path": active})
        return 0
    g, width = render.glyphs_for(sys.stdout), render.terminal_width()
    if args.full:
        width = 0
    lines = [*render.thread_header(thread, entries, g, width), ""]
    if args.path:
        lines += render.path_lines([by_id[i] for i in active], g, width or 10_000)
    else:
        lines += [*render.tree_lines(thread, entries, g, width or 10_000), "", render.legend(g)]
    render.write_lines(lines)
    return 0


async def cmd_export(args: argparse.Namespace) -> int:
    """``export THREAD``: the thread and its whole tree as JSON."""
    path = db_path(args)
    async with open_store(path, create=False) as store:
        thread = await require_thread(store, args.thread, path)
        entries = await all_entries(store, thread.id)
    document = export_document(thread, entries)
    if args.out is None or args.out == "-":
        print_json(document)
        return 0
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    target = Path(args.out)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    render.write_lines([f"Exported thread {thread.id} ({count}) to {args.out}."])
    return 0


async def cmd_import(args: argparse.Namespace) -> int:
    """``import FILE``: chat messages (JSON or JSONL) or an export file into a thread."""
    path = db_path(args)
    loaded = read_import_file(args.file)  # read and check everything before touching the store
    name = "stdin" if args.file == "-" else args.file
    messages = openai_messages_to_entries(name, loaded.messages) if loaded.messages is not None else None
    async with open_store(path, create=True) as store:
        if messages is not None:
            thread_id, count, created = await import_messages(store, messages, args)
        elif loaded.export is not None:
            thread_id, count, created = await import_export(store, loaded.export, args, path)
        else:  # read_import_file returns one or the other
            raise CliError(f"{name} holds neither messages nor an exported thread")
        thread = await require_thread(store, thread_id, path)
    if args.json:
        print_json({"thread_id": thread_id, "entries": count, "created": created, "agent_id": thread.agent_id})
        return 0
    how = f"a new thread of agent {thread.agent_id}" if created else "the end of the active branch"
    render.write_lines(
        [
            f"Imported {count} entr{'y' if count == 1 else 'ies'} into thread {thread_id} ({how}).",
            f"See it with: {command_hint(args, 'show', thread_id)}",
        ]
    )
    return 0


async def _target(store: SQLiteAdapter, thread_id: str | None, agent: str, args: argparse.Namespace) -> Thread | None:
    """The existing thread ``--thread`` names (checked against ``--agent``), or ``None``."""
    if thread_id is None:
        return None
    existing = need(await store.get_thread(thread_id))
    if existing is not None and args.agent is not None and existing.agent_id != agent:
        raise CliError(f"thread {thread_id} belongs to agent {existing.agent_id}, not {agent}")
    return existing


async def _write_all(
    store: SQLiteAdapter,
    thread_id: str,
    before: set[str] | None,
    previous_leaf: str | None,
    steps: Callable[[], Awaitable[int]],
) -> int:
    """Run the writes of an import; when one fails, take back what was written and fail.

    ``before`` holds the ids of the entries an existing thread had (``None`` for a thread the
    import created, which is deleted again).
    """
    try:
        return await steps()
    except BaseException:
        if before is None:
            await store.delete_thread(thread_id)
        else:
            written = await store.get_entries(thread_id=thread_id, types="all")
            for entry in reversed(written.data or []):
                if entry.id not in before:
                    await store.delete_entry(entry.id)
            if previous_leaf is not None:
                await store.checkout(thread_id, previous_leaf)
        raise


async def import_messages(
    store: SQLiteAdapter, messages: list[NewMemoryEntry], args: argparse.Namespace
) -> tuple[str, int, bool]:
    """Append chat messages after the active leaf of ``--thread`` (created when missing)."""
    agent = args.agent or DEFAULT_AGENT
    existing = await _target(store, args.thread, agent, args)
    before: set[str] | None = None
    if existing is None:
        thread = need(await store.create_thread(agent, thread_id=args.thread))
    else:
        thread = existing
        before = {e.id for e in await all_entries(store, thread.id)}

    async def steps() -> int:
        for entry in messages:
            need(await store.add_entry(entry.model_copy(update={"thread_id": thread.id})))
        return len(messages)

    count = await _write_all(store, thread.id, before, thread.active_leaf_id, steps)
    return thread.id, count, existing is None


async def import_export(
    store: SQLiteAdapter, exported: ExportedThread, args: argparse.Namespace, path: str
) -> tuple[str, int, bool]:
    """Recreate an exported tree: every branch, the active leaf, the times of the records.

    Into a new thread (the exported id, or ``--thread``), or, when ``--thread`` names an
    existing thread, after its active leaf. Entry ids are new: the store gives them, and an event
    that names an entry written before it (a compaction's first kept entry, a label's target) names
    its copy.
    """
    source = exported.thread
    thread_id = args.thread or source.id
    agent = args.agent or source.agent_id
    existing = await _target(store, thread_id, agent, args)
    if existing is not None and args.thread is None:
        raise CliError(
            f"thread {thread_id} already exists in {path}: pass --thread NEW_ID to import a copy, "
            f"or --thread {thread_id} to add the entries after its active leaf"
        )
    before: set[str] | None = None
    if existing is None:
        with frozen_clock(source.created_at):
            thread = need(await store.create_thread(agent, source.metadata, thread_id=thread_id))
    else:
        thread = existing
        before = {e.id for e in await all_entries(store, thread.id)}

    async def steps() -> int:
        new_ids: dict[str, str] = {}
        for entry in exported.entries:
            new = NewMemoryEntry(
                thread_id=thread.id,
                parent_id=new_ids[entry.parent_id] if entry.parent_id is not None else None,
                activate=False,
                type=entry.type,
                message=entry.message,
                event=tree.with_entry_ids_mapped(entry.event, new_ids),
                metadata=entry.metadata,
                tool_calls=entry.tool_calls,
                tool_results=entry.tool_results,
                token_count=entry.token_count,
            )
            with frozen_clock(entry.created_at):
                new_ids[entry.id] = need(await store.add_entry(new)).id
        if source.active_leaf_id is not None:
            need(await store.checkout(thread.id, new_ids[source.active_leaf_id]))
        if existing is None:
            with frozen_clock(source.updated_at):
                need(await store.update_thread(thread.id, {}))
        return len(new_ids)

    count = await _write_all(store, thread.id, before, thread.active_leaf_id, steps)
    return thread.id, count, existing is None


# --- the parser ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    db = _Parser(add_help=False)
    db.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help=f"the SQLite file (default: ${DB_ENV}, else ./{DEFAULT_PATH})",
    )
    parser = _Parser(
        prog=PROG,
        description="Look into and move conversation threads of a cogitator-memory SQLite file.",
        epilog=f"Start with '{PROG} demo'. Each command has --help.",
        parents=[db],
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = sub.add_parser(
        "demo", parents=[db], help="write a demo conversation with a branch and a fork, and print its tree"
    )
    demo.set_defaults(handler=cmd_demo)

    threads = sub.add_parser("threads", parents=[db], help="list threads, the most recently updated first")
    threads.add_argument("--agent", metavar="ID", help="only the threads of this agent")
    threads.add_argument(
        "--meta",
        metavar="KEY=VALUE",
        action="append",
        help="only threads whose metadata has KEY equal to VALUE (JSON when it parses, else text); repeatable",
    )
    threads.add_argument(
        "--limit", type=page_size, default=50, metavar="N", help="threads per page, 1 to 1000 (default 50)"
    )
    threads.add_argument("--cursor", metavar="CURSOR", help="the cursor a previous page printed, for the next page")
    threads.add_argument("--json", action="store_true", help="print JSON: {threads, next_cursor}")
    threads.set_defaults(handler=cmd_threads)

    show = sub.add_parser("show", parents=[db], help="print the tree of a thread, the active path marked")
    show.add_argument("thread", metavar="THREAD", help="the thread id")
    show.add_argument("--path", action="store_true", help="print only the active path, as a conversation")
    show.add_argument("--full", action="store_true", help="do not cut long lines to the terminal's width")
    show.add_argument("--json", action="store_true", help="print JSON: {thread, entries, active_path}")
    show.set_defaults(handler=cmd_show)

    imp = sub.add_parser(
        "import", parents=[db], help="import chat messages (JSON or JSONL, OpenAI style) or an exported thread"
    )
    imp.add_argument("file", metavar="FILE", help="the file to read, '-' for stdin")
    imp.add_argument("--thread", metavar="ID", help="the thread to write into: created when missing, else appended to")
    imp.add_argument(
        "--agent", metavar="ID", help=f"the agent of a new thread (default: {DEFAULT_AGENT}, or the exported one)"
    )
    imp.add_argument("--json", action="store_true", help="print JSON: {thread_id, entries, created, agent_id}")
    imp.set_defaults(handler=cmd_import)

    exp = sub.add_parser("export", parents=[db], help="write a thread and its whole tree as JSON")
    exp.add_argument("thread", metavar="THREAD", help="the thread id")
    exp.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    exp.set_defaults(handler=cmd_export)
    return parser


def _fail(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {' '.join(message.split())}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except CliError as exc:
        _fail(str(exc))
        return exc.code
    except SystemExit as exc:  # --help and --version
        return exc.code if isinstance(exc.code, int) else 0
    if args.command is None:
        parser.print_help()
        return 0
    handler: Callable[[argparse.Namespace], Awaitable[int]] = args.handler
    _tolerant_stdout()
    try:
        return run(handler(args))
    except CliError as exc:
        _fail(str(exc))
        return exc.code
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        _fail(f"unexpected {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 to see the traceback)")
        return 1


def _tolerant_stdout() -> None:
    """Let text the terminal cannot encode print as ``?`` instead of failing the command."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None and getattr(sys.stdout, "errors", "strict") == "strict":
        with suppress(ValueError, OSError):
            reconfigure(errors="replace")


def _quiet_stdout() -> None:
    """After a closed pipe, point stdout at devnull so the exit flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


__all__ = ["DB_ENV", "DEFAULT_AGENT", "PROG", "build_parser", "db_path", "main", "parse_meta"]
