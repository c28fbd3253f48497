"""The memory commands of ``cogitator-memory``: ``search``, ``recall``, ``remember``, ``facts`` and ``mcp``.

They run on the store every command resolves the same way (``--db PATH``, ``--config FILE``,
``$COGITATOR_MEMORY_DB``, ``$COGITATOR_CONFIG`` or ``./cogitator.yml``, else SQLite at
``~/.cogitator/memory.db``: :mod:`.where`), any engine. A bad config or an unreachable store is
one error line naming the key, before anything is done.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from ..errors import InvalidArgumentError, MemoryStoreError
from ..runtime.config import MemoryConfig
from ..runtime.memory import Memory, create_store, store_key
from . import render
from .auth import auth_flags, token_of
from .formats import CliError
from .store import PROG, open_store
from .where import add_config_flag, command_config, store_label


def config_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--config FILE`` (the memory config naming the store) to ``parser``: the same flag,
    with the same help, on every command (see :mod:`.where`)."""
    add_config_flag(parser)


def who_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--user ID`` and ``--agent ID`` (whose memory a command reads or writes) to
    ``parser``: the same flags, with the same help, on every memory command."""
    parser.add_argument("--user", metavar="ID", help="whose memory (default: shared)")
    parser.add_argument("--agent", metavar="ID", help="the agent (default: the config's agent_id)")


@asynccontextmanager
async def open_command_store(args: argparse.Namespace, *, create: bool = False) -> AsyncIterator[Any]:
    """The connected thread store a command (``threads``, ``show``, ``export``, ``import``,
    ``demo``) works on, resolved as every command resolves it (:func:`.where.command_config`).
    A SQLite file is opened as a :class:`~cogitator_memory.cli.store.CliStore` (writes in one
    transaction); with ``create=False`` a missing file is an error. Where it is: :func:`store_label`."""
    async with open_config_store(memory_config(args), create=create) as store:
        yield store


@asynccontextmanager
async def open_config_store(config: MemoryConfig, *, create: bool = False) -> AsyncIterator[Any]:
    """The connected thread store ``config`` names (a SQLite file as a
    :class:`~cogitator_memory.cli.store.CliStore`, missing unless ``create``); a bad option or a
    store that cannot be reached is a :class:`CliError` naming the key."""
    if config.adapter == "sqlite":
        async with open_store(config.sqlite_path(), create=create) as sqlite:
            yield sqlite
        return
    try:
        store = create_store(config)
    except InvalidArgumentError as exc:
        raise CliError(str(exc)) from None
    opened = await store.connect()
    if not opened.success:
        raise CliError(
            f"invalid argument '{store_key(config)}': cannot reach the {config.adapter} store: {opened.error}"
        )
    try:
        yield store
    finally:
        await store.disconnect()


def memory_config(args: argparse.Namespace) -> MemoryConfig:
    """The config of the command, its store resolved by the one rule of :mod:`.where`."""
    return command_config(args)


async def open_memory(args: argparse.Namespace, *, embedding_service: Any = None) -> Memory:
    """The connected memory of the command's config (``embedding_service`` replaces the
    configured one); a bad config or store is a :class:`CliError`."""
    try:
        # A command is one operation on the store: an unreachable store fails it, whatever the
        # config's on_error says an agent run should do (go on without memory).
        config = memory_config(args).model_copy(update={"on_error": "raise"})
        return await Memory.open(config, embedding_service=embedding_service)
    except (InvalidArgumentError, MemoryStoreError) as exc:
        raise CliError(str(exc)) from None


async def cmd_search(args: argparse.Namespace) -> int:
    """``search``: the turns and memory items that answer a query, best first."""
    if args.every_user and args.user is not None:
        raise CliError("--every-user searches every user's memory: leave out --user")
    memory = await open_memory(args)
    try:
        hits = await memory.search(
            args.query,
            user_id=args.user,
            agent_id=args.agent,
            thread_id=args.thread,
            limit=args.limit,
            as_of=args.as_of,
            time_zone=args.time_zone,
            # no --user: the shared memory, as recall, remember and facts read it
            shared_only=args.user is None and not args.every_user,
            kinds=args.kinds,
        )
    except InvalidArgumentError as exc:
        raise CliError(str(exc)) from None
    finally:
        await memory.close()
    if args.json:
        render.print_json({"results": [hit.dump() for hit in hits]})
        return 0
    if not hits:
        print("nothing found")
        return 0
    for hit in hits:
        where = f"{hit.thread_id} " if hit.thread_id else ""
        print(f"{hit.score:.3f}  {hit.kind:<5} {where}{render.one_line(hit.text)}")
    return 0


async def cmd_recall(args: argparse.Namespace) -> int:
    """``recall``: the facts ``remember`` saved whose text matches the query, and every core fact
    (:meth:`Memory.recall <cogitator_memory.runtime.Memory.recall>`, the MCP ``recall`` tool)."""
    memory = await open_memory(args)
    try:
        answer = await memory.recall(args.query, user_id=args.user, agent_id=args.agent)
    except (InvalidArgumentError, MemoryStoreError) as exc:
        raise CliError(str(exc)) from None
    finally:
        await memory.close()
    if args.json:
        render.print_json(answer)
        return 0
    results = answer.get("results") or []
    core = answer.get("core_facts") or {}
    if not results and not core:
        print(f"nothing found (save a fact with '{PROG} remember FACT')")
        return 0
    for result in results:
        fact = result.get("fact") if isinstance(result, dict) else result
        print(render.one_line(str(fact)))
    for key, value in core.items():
        print(f"{render.one_line(str(key))}: {render.one_line(str(value))}")
    return 0


async def cmd_remember(args: argparse.Namespace) -> int:
    """``remember``: save a fact in the knowledge graph (and as a core fact with ``--core-key``)."""
    memory = await open_memory(args)
    try:
        answer = await memory.remember(
            args.fact, category=args.category, core_fact_key=args.core_key, user_id=args.user, agent_id=args.agent
        )
    except (InvalidArgumentError, MemoryStoreError) as exc:
        raise CliError(str(exc)) from None
    finally:
        await memory.close()
    if args.json:
        render.print_json(answer)
    else:
        state = "updated" if answer.get("updated") else "saved"
        core = answer.get("core_fact")
        extra = f" (core fact {core['key']})" if isinstance(core, dict) else ""
        print(f"{state} {answer.get('id')}: {render.one_line(str(answer.get('fact')))}{extra}")
    return 0


async def cmd_facts(args: argparse.Namespace) -> int:
    """``facts``: the core facts of a user, one ``key: value`` a line."""
    memory = await open_memory(args)
    try:
        facts = await memory.facts(user_id=args.user, agent_id=args.agent)
    except InvalidArgumentError as exc:
        raise CliError(str(exc)) from None
    finally:
        await memory.close()
    if args.json:
        render.print_json({"facts": facts})
    elif not facts:
        print(f"no core facts (save one with '{PROG} remember FACT --core-key KEY')")
    else:
        for key, value in facts.items():
            print(f"{render.one_line(key)}: {render.one_line(value)}")
    return 0


async def cmd_mcp(args: argparse.Namespace) -> int:
    """``mcp``: serve the memory to MCP clients over stdio, or streamable HTTP with ``--http``
    (a bearer token asked unless ``--no-auth``)."""
    try:
        from ..server.mcp import serve
    except ModuleNotFoundError as exc:
        raise CliError(str(exc)) from None
    config = memory_config(args)
    token = token_of(args) if args.http else None
    try:
        await serve(
            config,
            transport="http" if args.http else "stdio",
            host=args.host,
            port=args.port,
            user_id=args.user,
            agent_id=args.agent,
            any_user=args.any_user,
            token=token,
            no_auth=args.no_auth,
        )
    except (InvalidArgumentError, MemoryStoreError) as exc:
        raise CliError(str(exc)) from None
    return 0


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be from 1 to 100, got {value}")
    return value


def moment(text: str) -> datetime:
    """An ISO 8601 time (``2024-05-08``, ``2024-05-08T13:56``; UTC without an offset)."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an ISO 8601 time like 2024-05-08T13:56, got {text!r}") from None


def port_number(text: str) -> int:
    """An argparse type: a port number from 0 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 0 to 65535, got {value}")
    return value


def register(sub: Any, db: argparse.ArgumentParser) -> None:
    """Add ``search``, ``recall``, ``remember``, ``facts`` and ``mcp`` to the subcommands ``sub`` (``db``:
    the parent parser holding ``--db``)."""
    config = argparse.ArgumentParser(add_help=False)
    config_flag(config)
    who = argparse.ArgumentParser(add_help=False)
    who_flags(who)
    parents = [db, config, who]

    search = sub.add_parser("search", parents=parents, help="search turns and memory items of a user")
    search.add_argument("query", metavar="QUERY", help="what to look for")
    search.add_argument("--thread", metavar="ID", help="only this thread")
    search.add_argument("--limit", type=_limit, default=10, metavar="N", help="at most N hits, 1 to 100 (default 10)")
    search.add_argument(
        "--as-of",
        type=moment,
        metavar="TIME",
        help="when the query is asked, ISO 8601 (the time it names is read from it)",
    )
    search.add_argument("--time-zone", metavar="ZONE", help="the IANA zone its time is read in (default the config's)")
    search.add_argument(
        "--kind",
        dest="kinds",
        action="append",
        choices=["entry", "item", "fact", "file"],
        help="only hits of this kind (turns, memory items, remembered facts, memory file sections); repeatable",
    )
    search.add_argument(
        "--every-user",
        action="store_true",
        help="without --user, search every user's memory (an operator's view) instead of the shared one",
    )
    search.add_argument("--json", action="store_true", help="print JSON: {results}")
    search.set_defaults(handler=cmd_search)

    recall = sub.add_parser(
        "recall", parents=parents, help="the facts saved with 'remember' that match a query, and the core facts"
    )
    recall.add_argument("query", metavar="QUERY", help="what to look for")
    recall.add_argument("--json", action="store_true", help="print the recall tool's answer: {results, core_facts}")
    recall.set_defaults(handler=cmd_recall)

    remember = sub.add_parser("remember", parents=parents, help="save a fact in the knowledge graph")
    remember.add_argument("fact", metavar="FACT", help="the fact, as a sentence")
    remember.add_argument("--category", metavar="NAME", help="a short topic (pets, work...)")
    remember.add_argument("--core-key", metavar="KEY", help="also keep it as this core fact (user_name...)")
    remember.add_argument("--json", action="store_true", help="print the tool's answer as JSON")
    remember.set_defaults(handler=cmd_remember)

    facts = sub.add_parser("facts", parents=parents, help="list the core facts of a user")
    facts.add_argument("--json", action="store_true", help="print JSON: {facts}")
    facts.set_defaults(handler=cmd_facts)

    from ..server.access import MCP_PORT

    mcp = sub.add_parser("mcp", parents=parents, help="serve the memory to MCP clients (stdio, or --http)")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP at http://HOST:PORT/mcp")
    mcp.add_argument("--host", default="127.0.0.1", help="the address of --http (default 127.0.0.1, loopback)")
    mcp.add_argument("--port", type=port_number, default=MCP_PORT, help=f"the port of --http (default {MCP_PORT})")
    mcp.add_argument(
        "--any-user",
        action="store_true",
        help="let calls name any user and thread (default: only --user's, or the shared memory without --user)",
    )
    auth_flags(mcp)
    mcp.set_defaults(handler=cmd_mcp)


__all__ = [
    "cmd_facts",
    "cmd_mcp",
    "cmd_recall",
    "cmd_remember",
    "cmd_search",
    "config_flag",
    "memory_config",
    "moment",
    "open_command_store",
    "open_config_store",
    "open_memory",
    "port_number",
    "register",
    "store_label",
    "who_flags",
]
