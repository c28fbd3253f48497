"""The commands of ``cogitator-memory``: parsing, running them on the store, errors.

Every command works on the same store, resolved in one place (:mod:`.where`): ``--db PATH``, else
``--config FILE``, else ``$COGITATOR_MEMORY_DB``, else the store of ``$COGITATOR_CONFIG`` or
``./cogitator.yml``, else SQLite at ``~/.cogitator/memory.db``. A user error prints one line starting with
``cogitator-memory: error:`` and exits 1 (2 for a bad command line), without a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from .. import __version__, clock
from ..errors import InvalidArgumentError
from ..ids import thread_id as new_thread_id
from ..threads import tree
from ..threads.records import NewMemoryEntry
from . import memory_commands, render
from .demo import DEMO_AGENT, DEMO_FORK, DEMO_THREAD, write_demo
from .forget import register as register_forget
from .formats import CliError, ImportFile, entry_json, export_chunks, messages_to_entries, read_import_file
from .importing import ImportResult, import_export, import_messages
from .progress import Progress, progress_flag, progress_of
from .reindex import register as register_reindex
from .serve import register as register_serve
from .store import DEFAULT_AGENT, PROG, all_entries, need, require_thread
from .where import DB_ENV, DEFAULT_STORE, add_db_flag, store_label, where_flags

DEBUG_ENV = "COGITATOR_MEMORY_DEBUG"

T = TypeVar("T")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (a :class:`CliError` with exit status 2)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see '{self.prog} --help')", code=2)


# --- plumbing -----------------------------------------------------------------------------


def command_hint(args: argparse.Namespace, *words: str) -> str:
    """A command line to run next, with the ``--db`` / ``--config`` the user gave."""
    return shlex.join([PROG, *words, *where_flags(args)])


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


def page_size(text: str) -> int:
    """``--limit``: an int from 1 to 1000."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"must be from 1 to 1000, got {value}")
    return value


def run(coroutine: Awaitable[T]) -> T:
    """Run a command's coroutine to its end (Ctrl-C cancels it: ``KeyboardInterrupt``)."""

    async def wrapper() -> T:
        return await coroutine

    return asyncio.run(wrapper())


# --- commands -----------------------------------------------------------------------------


async def cmd_demo(args: argparse.Namespace) -> int:
    """``demo``: write the demo conversation and print its tree and active path."""
    where = store_label(args)
    g, width = render.glyphs_for(sys.stdout), render.terminal_width()
    async with memory_commands.open_command_store(args, create=True) as store:
        demo = await write_demo(store)
        entries = await all_entries(store, DEMO_THREAD)
        fork_entries = await all_entries(store, DEMO_FORK)
        path_entries = need(await store.get_path(thread_id=DEMO_THREAD, types="all", include_tool_calls=True))
    again = " (replacing the demo threads of an earlier run)" if demo.replaced else ""
    tail = render.short_ids(e.id for e in entries)[demo.alternative.id]
    lines = [
        f"Wrote a demo conversation to {where}{again}.",  # a long path is not cut
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
        f"  {command_hint(args, 'search', 'dinner', '--user', 'ada', '--agent', DEMO_AGENT)}",
        f"  {command_hint(args, 'export', DEMO_THREAD, '--out', 'trip.json')}",
    ]
    render.write_lines(lines)
    return 0


async def cmd_threads(args: argparse.Namespace) -> int:
    """``threads``: one page of threads, the most recently updated first."""
    wanted = parse_meta(args.meta)
    async with memory_commands.open_command_store(args) as store:
        page = need(
            await store.list_threads(agent_id=args.agent, metadata=wanted or None, limit=args.limit, cursor=args.cursor)
        )
    if args.json:
        render.print_json({"threads": [t.dump() for t in page.threads], "next_cursor": page.next_cursor})
        return 0
    g, width = render.glyphs_for(sys.stdout), render.terminal_width()
    if not page.threads:
        filtered = args.agent is not None or bool(wanted) or args.cursor is not None
        where = store_label(args)
        render.write_lines([f"No threads {'match' if filtered else 'yet'} in {where}."])
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
    progress = progress_of(args)
    async with memory_commands.open_command_store(args) as store:
        thread = await require_thread(store, args.thread, store_label(args))
        progress.start(f"reading thread {render.one_line(thread.id)}")
        entries = await all_entries(store, thread.id)
    progress.update(len(entries))
    progress.end()
    by_id = {e.id: e for e in entries}
    active = render.active_path_ids(thread, by_id)
    if args.json:
        render.print_json({"thread": thread.dump(), "entries": [entry_json(e) for e in entries], "active_path": active})
        return 0
    g, width = render.glyphs_for(sys.stdout), render.terminal_width()
    if args.full:
        width = 0
    lines = [*render.thread_header(thread, entries, g, width), ""]
    if args.path:
        lines += render.path_lines([by_id[i] for i in active], g, width or 10_000)
    else:
        progress.start("drawing", len(entries))
        lines += [*render.tree_lines(thread, entries, g, width or 10_000, progress.update), "", render.legend(g)]
        progress.update(len(entries))
        progress.end()
    render.write_lines(lines)
    return 0


async def cmd_export(args: argparse.Namespace) -> int:
    """``export THREAD``: the thread and its whole tree as JSON, written entry by entry.

    To a file, the text goes to a temporary file beside it that replaces the target at the end,
    so a failed or interrupted export never leaves a cut file behind.
    """
    progress = progress_of(args)
    async with memory_commands.open_command_store(args) as store:
        thread = await require_thread(store, args.thread, store_label(args))
        progress.start(f"reading thread {render.one_line(thread.id)}")
        entries = await all_entries(store, thread.id)
    progress.update(len(entries))
    progress.start("exporting", len(entries))
    if args.out is None or args.out == "-":
        ascii_only = render.glyphs_for(sys.stdout) is render.ASCII
        for number, chunk in enumerate(export_chunks(thread, entries, ascii_only=ascii_only)):
            sys.stdout.write(render.json_terminal_safe(chunk))
            progress.update(min(number, len(entries)))
        progress.end()
        return 0
    target = Path(args.out)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    try:
        with open(handle, "w", encoding="utf-8") as out:
            for number, chunk in enumerate(export_chunks(thread, entries)):
                out.write(chunk)
                progress.update(min(number, len(entries)))
        os.replace(temporary, target)
    except OSError as exc:
        raise CliError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    finally:
        with suppress(OSError):
            os.unlink(temporary)
    progress.end()
    count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
    render.write_lines([f"Exported thread {thread.id} ({count}) to {args.out}."])
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """``import FILE``: chat messages (JSON or JSONL) or an export file into a thread, all or nothing.

    The file is read, checked and converted before the event loop starts (Ctrl-C stops that at
    once), then written in one transaction (see :mod:`cogitator_memory.cli.importing`).
    """
    progress = progress_of(args)
    name = "stdin" if args.file == "-" else args.file
    progress.start(f"reading {name}")
    loaded = read_import_file(args.file)  # read and check everything before touching the store
    progress.end()
    if loaded.messages is not None:
        thread_id = args.thread or new_thread_id()
        entries = messages_to_entries(name, loaded, thread_id, args.format)
        if args.created_at is not None:
            try:
                said = tree.check_said_at("--created-at", args.created_at, clock.now())
            except InvalidArgumentError as exc:
                raise CliError(str(exc)) from None
            entries = [e.model_copy(update={"created_at": said}) for e in entries]
        done = run(_write_messages(entries, thread_id, args, progress))
    elif loaded.export is not None:
        if args.created_at is not None:
            raise CliError(f"--created-at dates chat messages; {name} is an export, whose entries keep their own times")
        thread_id = args.thread or loaded.export.thread.id
        done = run(_write_export(loaded, thread_id, args, progress))
    else:  # read_import_file returns one or the other
        raise CliError(f"{name} holds neither messages nor an exported thread")
    thread, count, created = done.thread, done.count, done.created
    if args.json:
        render.print_json(
            {
                "thread_id": thread.id,
                "entries": count,
                "created": created,
                "agent_id": thread.agent_id,
                "user_id": (thread.metadata or {}).get("user_id"),
            }
        )
        return 0
    owner = (thread.metadata or {}).get("user_id")
    of_user = f" for user {owner}" if isinstance(owner, str) else ""
    how = f"a new thread of agent {thread.agent_id}{of_user}" if created else "the end of the active branch"
    render.write_lines(
        [
            f"Imported {count} entr{'y' if count == 1 else 'ies'} into thread {thread.id} ({how}).",
            f"See it with: {command_hint(args, 'show', thread.id)}",
        ]
    )
    return 0


async def _write_messages(
    entries: list[NewMemoryEntry], thread_id: str, args: argparse.Namespace, progress: Progress
) -> ImportResult:
    async with memory_commands.open_command_store(args, create=True) as store:
        return await import_messages(store, entries, thread_id, args.agent, progress, user=args.user)


async def _write_export(
    loaded: ImportFile, thread_id: str, args: argparse.Namespace, progress: Progress
) -> ImportResult:
    assert loaded.export is not None
    async with memory_commands.open_command_store(args, create=True) as store:
        return await import_export(
            store,
            loaded.export,
            thread_id,
            args.agent,
            must_be_new=args.thread is None,
            progress=progress,
            user=args.user,
        )


# --- the parser ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command."""
    db = _Parser(add_help=False)
    add_db_flag(db)
    parser = _Parser(
        prog=PROG,
        description="Look into, search, move and forget what cogitator-memory keeps; serve it over MCP and HTTP. "
        f"Every command works on the same store: --db PATH, else --config FILE, else {DEFAULT_STORE}.",
        epilog=f"Start with '{PROG} demo'. Each command has --help.",
        parents=[db],
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = sub.add_parser(
        "demo", parents=[db], help="write a demo conversation with a branch and a fork, and print its tree"
    )
    memory_commands.config_flag(demo)
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
    memory_commands.config_flag(threads)
    threads.set_defaults(handler=cmd_threads)

    show = sub.add_parser("show", parents=[db], help="print the tree of a thread, the active path marked")
    show.add_argument("thread", metavar="THREAD", help="the thread id")
    show.add_argument("--path", action="store_true", help="print only the active path, as a conversation")
    show.add_argument("--full", action="store_true", help="do not cut long lines to the terminal's width")
    show.add_argument("--json", action="store_true", help="print JSON: {thread, entries, active_path}")
    progress_flag(show)
    memory_commands.config_flag(show)
    show.set_defaults(handler=cmd_show)
    register_forget(sub, db)

    imp = sub.add_parser(
        "import", parents=[db], help="import chat messages (JSON or JSONL, OpenAI style) or an exported thread"
    )
    imp.add_argument("file", metavar="FILE", help="the file to read, '-' for stdin")
    imp.add_argument("--thread", metavar="ID", help="the thread to write into: created when missing, else appended to")
    imp.add_argument(
        "--agent", metavar="ID", help=f"the agent of a new thread (default: {DEFAULT_AGENT}, or the exported one)"
    )
    imp.add_argument(
        "--user",
        metavar="ID",
        help="the user the conversation is with: a new thread is theirs (metadata user_id), so 'search --user' "
        "finds it and 'forget user' takes it; an existing thread must be theirs (default: the exported "
        "thread's user, else none)",
    )
    imp.add_argument(
        "--format",
        choices=("openai", "anthropic"),
        help="the shape of chat messages (default: Anthropic's when the file has its blocks or a top-level "
        "'system', else OpenAI's)",
    )
    imp.add_argument(
        "--created-at",
        type=memory_commands.moment,
        metavar="TIME",
        help="when the chat messages were said, ISO 8601 (UTC without an offset; default now)",
    )
    imp.add_argument("--json", action="store_true", help="print JSON: {thread_id, entries, created, agent_id, user_id}")
    progress_flag(imp)
    memory_commands.config_flag(imp)
    imp.set_defaults(handler=cmd_import)

    exp = sub.add_parser("export", parents=[db], help="write a thread and its whole tree as JSON")
    exp.add_argument("thread", metavar="THREAD", help="the thread id")
    exp.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    progress_flag(exp)
    memory_commands.config_flag(exp)
    exp.set_defaults(handler=cmd_export)
    memory_commands.register(sub, db)
    register_serve(sub, db)
    register_reindex(sub, db)
    return parser


def _fail(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {render.one_line(message)}\n")


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
    handler: Callable[[argparse.Namespace], Awaitable[int] | int] = args.handler
    _tolerant_stdout()
    progress = progress_of(args)
    try:
        outcome = handler(args)
        return run(outcome) if inspect.isawaitable(outcome) else outcome
    except CliError as exc:
        progress.clear()
        _fail(str(exc))
        return exc.code
    except KeyboardInterrupt:
        progress.clear()
        _fail("interrupted" + (": nothing was imported" if args.command == "import" else ""))
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 1
    except Exception as exc:
        progress.clear()
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


__all__ = ["DB_ENV", "DEFAULT_AGENT", "PROG", "build_parser", "command_hint", "main", "parse_meta"]
