"""The MCP server: the memory as tools any MCP client (Claude Desktop, IDEs, agents) can call.

Built on the official ``mcp`` SDK (the ``[server]`` extra). :func:`create_server` exposes a
connected :class:`~cogitator_memory.runtime.Memory` as the tools ``save_conversation`` (what
was said, through :meth:`Memory.add`), ``remember``, ``recall``, ``forget``, ``search_memory``,
``build_context`` and ``memory`` (the memory file tool), each with its annotations (read-only,
destructive, idempotent; none open-world), under the package's version; :func:`serve` opens the
memory of a config and runs the server over stdio (what a desktop client starts) or streamable
HTTP (loopback by default, a bearer token asked unless told ``no_auth``). Wrong arguments and
refused calls come back as tool errors (``isError``), never as a stopped server.

Every tool reads the one memory: what ``save_conversation`` and ``remember`` write,
``search_memory`` finds (the store's recall index) and ``build_context`` sends. The ``memory``
tool of a server keeps the SHA-256 of each file as it last showed or wrote it (a
:class:`~cogitator_memory.files.tools.MemoryFileTool`), so an edit of a file another writer
changed since is refused (the protocol's calls carry no session to tell a server's clients apart
by: they share it); ``build_context`` lists the memory files in the system message, as
:meth:`Memory.build_context <cogitator_memory.runtime.Memory.build_context>` does for every caller.

A server serves one user: the one it was started for (``user_id``; none is the shared memory). A
call naming another ``user_id``, or a ``thread_id`` of another user's thread, is refused, and a
search finds only that user's memory and the shared one (a server of no user: the shared memory
alone, as ``recall`` sees it), left out inside the store's indexes; ``any_user=True``
(``--any-user``) lets calls name any user (and a search naming none searches every user's). See
``docs/mcp.md``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .. import __version__
from ..errors import InvalidArgumentError, MemoryStoreError
from ..files.tools import MemoryFileTool
from ..models.convert import to_openai_messages
from ..result import unwrap
from ..runtime.config import MemoryConfig
from ..runtime.memory import Memory
from ..threads.records import USER_ID_KEY
from .access import MCP_PORT, BearerAuth, run_app, settle_token
from .net import LOOPBACK_NAMES, url_host

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.types import ToolAnnotations
except ModuleNotFoundError as exc:  # pragma: no cover - depends on the install
    raise ModuleNotFoundError(
        "the MCP server needs the mcp package: pip install 'cogitator-memory[server]'", name=exc.name
    ) from exc

#: The server's name as clients list it.
SERVER_NAME = "cogitator-memory"
#: The port of ``--http`` unless one is given.
DEFAULT_PORT = MCP_PORT
#: The path the streamable HTTP endpoint is served at.
HTTP_PATH = "/mcp"

#: The most messages one ``save_conversation`` call takes.
MAX_SAVED_MESSAGES = 500
#: The most characters of text one ``save_conversation`` call takes, all messages together (as a
#: REST body is at most 1 MiB).
MAX_SAVED_CHARS = 1_000_000

T = TypeVar("T")

_INSTRUCTIONS = (
    "Long-term memory. Call save_conversation with what the user said (and your replies) so later "
    "conversations can find it; keep the thread_id it answers and pass it on the next call of the "
    "same conversation. Call recall or search_memory before answering questions about the user, "
    "remember to save facts worth keeping (is_core_fact with core_fact_key for the few that always "
    "matter: name, time zone), forget when asked to. search_memory finds saved conversation turns, "
    "extracted memory items and remembered facts; build_context gives a conversation's next "
    "messages with what memory holds for them; memory reads and writes notes under /memories."
)


class SaidMessage(BaseModel):
    """One message of what was said, as ``save_conversation`` takes it."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"] = Field(description="Who said it.")
    content: str = Field(min_length=1, description="What was said.")
    name: str | None = Field(
        default=None,
        min_length=1,
        description="The speaker's name, in a conversation between people (each of them role user).",
    )


def _annotations(*, read_only: bool = False, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    """A tool's MCP annotations; no memory tool reaches beyond the memory (not open-world)."""
    return ToolAnnotations(
        read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=False
    )


async def _guard(call: Awaitable[T]) -> T:
    """The call's result; a refused call (bad argument, store failure) becomes a tool error
    carrying its message."""
    try:
        return await call
    except (MemoryStoreError, ValueError) as exc:
        raise ToolError(str(exc)) from exc


def create_server(
    memory: Memory, *, user_id: str | None = None, agent_id: str | None = None, any_user: bool = False
) -> MCPServer:
    """An MCP server over ``memory`` (connected by the caller). ``user_id`` and ``agent_id`` are
    whose memory the tools read and write. The server serves only ``user_id`` (``None``: the
    shared memory): a call naming another user, or another user's thread, is a tool error, and
    search hits from another user's threads are left out. ``any_user=True`` lets calls name any
    user and thread (a user's own ``user_id`` argument then picks whose memory)."""

    server = MCPServer(SERVER_NAME, version=__version__, instructions=_INSTRUCTIONS, log_level="WARNING")
    served = "the shared memory (no user)" if user_id is None else f"user {user_id!r}"
    #: The memory file tool of this server (what it last showed or wrote of each file).
    made: list[MemoryFileTool] = []

    def who(user: str | None) -> dict[str, Any]:
        if user is not None and user != user_id and not any_user:
            raise ToolError(
                f"invalid argument 'user_id': this server serves only {served}, not {user!r} "
                "(start it with --any-user to serve every user)"
            )
        return {"user_id": user if user is not None else user_id, "agent_id": agent_id}

    async def owner_of(thread_id: str, known: dict[str, str | None]) -> str | None:
        """The user whose thread ``thread_id`` is (``None``: nobody's, or no such thread), read
        once per call (``known``)."""
        if thread_id not in known:
            thread = await _guard(_get_thread(memory, thread_id))
            owner = (thread.metadata or {}).get(USER_ID_KEY) if thread is not None else None
            known[thread_id] = owner if isinstance(owner, str) else None
        return known[thread_id]

    async def check_thread(thread_id: str | None, user: str | None) -> None:
        """Refuse ``thread_id`` when it is a thread of a user other than ``user``."""
        if thread_id is None or any_user:
            return
        owner = await owner_of(thread_id, {})
        if owner is not None and owner != user:
            raise ToolError(f"invalid argument 'thread_id': {thread_id} is another user's thread ({served} here)")

    def file_tool() -> MemoryFileTool:
        """The memory file tool of this server, in its user's files (made at its first use)."""
        assert memory.files is not None
        if not made:
            scope: dict[str, Any] = {"agent_id": agent_id if agent_id is not None else memory.agent_id}
            if user_id is not None:
                scope["user_id"] = user_id
            made.append(MemoryFileTool(memory.files, {"scope": scope}))
        return made[0]

    async def save_conversation(
        messages: Annotated[
            list[SaidMessage],
            Field(
                min_length=1,
                max_length=MAX_SAVED_MESSAGES,
                description="What was said, in order: one message or a whole exchange.",
            ),
        ],
        thread_id: Annotated[
            str | None,
            Field(
                min_length=1,
                description="The conversation to add to (made when it does not exist); "
                "leave it out to start a new one, and reuse the thread_id answered.",
            ),
        ] = None,
        user_id: Annotated[str | None, Field(description="Whose memory (default: the server's user).")] = None,
        idempotency_key: Annotated[
            str | None,
            Field(
                min_length=1,
                description="With thread_id: a key of this save, so a retry of it writes nothing twice.",
            ),
        ] = None,
        created_at: Annotated[
            datetime | None,
            Field(
                description="When the messages were said, ISO 8601 (UTC without an offset; default now): "
                "for a conversation saved after the fact."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Save what was said (a message, or several of a conversation) to long-term memory, in
        a new conversation or the one thread_id names; search_memory and build_context find it
        afterwards."""
        scope = who(user_id)
        size = sum(len(m.content) for m in messages)
        if size > MAX_SAVED_CHARS:
            raise ToolError(
                f"invalid argument 'messages': {size:,} characters of text, more than {MAX_SAVED_CHARS:,} "
                "in one call: save the conversation in parts"
            )
        await check_thread(thread_id, scope["user_id"])
        added = await _guard(
            memory.add(
                [m.model_dump(exclude_none=True) for m in messages],
                thread_id=thread_id,
                idempotency_key=idempotency_key,
                created_at=created_at,
                **scope,
            )
        )
        answer: dict[str, Any] = {
            "thread_id": added.thread_id,
            "saved": len(added.entries),
            "entry_ids": [e.id for e in added.entries],
        }
        if added.replayed:
            answer["replayed"] = True
        if added.errors:
            answer["warnings"] = [f"{e.stage} failed (the messages are saved): {e.message}" for e in added.errors]
        return answer

    async def remember(
        fact: Annotated[str, Field(min_length=1, description="The fact to save, as a sentence.")],
        category: Annotated[str | None, Field(description="A short category (pets, work...).")] = None,
        is_core_fact: Annotated[bool, Field(description="Also keep it as a core fact, always in the prompt.")] = False,
        core_fact_key: Annotated[str | None, Field(description="The core fact's key (user_name).")] = None,
    ) -> dict[str, Any]:
        """Save a fact about the user in long-term memory."""
        if is_core_fact and not core_fact_key:
            raise ToolError("core_fact_key is required when is_core_fact is true")
        return await _guard(
            memory.remember(fact, category=category, core_fact_key=core_fact_key if is_core_fact else None, **who(None))
        )

    async def recall(
        query: Annotated[str, Field(min_length=1, description="Words to look for in saved facts.")],
    ) -> dict[str, Any]:
        """Find saved facts matching the query (up to 10), with every core fact."""
        return await _guard(memory.recall(query, **who(None)))

    async def forget(
        query: Annotated[str, Field(min_length=1, description="Facts whose text matches this are deleted.")],
        all: Annotated[
            bool,
            Field(
                description="Delete every match even of a broad query (more than 3 facts, or most of them); "
                "without it such a query deletes nothing and lists them."
            ),
        ] = False,
    ) -> dict[str, Any]:
        """Delete every saved fact whose text matches the query; a broad query deletes nothing and
        lists what it would take, unless all is true."""
        return await _guard(memory.forget(query, take_all=all, **who(None)))

    async def search_memory(
        query: Annotated[str, Field(min_length=1, description="What to look for.")],
        user_id: Annotated[str | None, Field(description="Whose memory (default: the server's user).")] = None,
        thread_id: Annotated[str | None, Field(description="Only this conversation.")] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="At most this many hits.")] = 10,
        as_of: Annotated[
            datetime | None,
            Field(description="When the query is asked, ISO 8601 (UTC without an offset; default now)."),
        ] = None,
        time_zone: Annotated[
            str | None, Field(description="The IANA time zone its times are read in (default the config's).")
        ] = None,
        kinds: Annotated[
            list[Literal["entry", "item", "fact", "file"]] | None,
            Field(
                min_length=1,
                description="Only these kinds of hits: entry (turns), item (memory items, core facts), "
                "fact (facts saved with remember), file (memory file sections). Default all.",
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Search past conversation turns and extracted memory items, best first."""
        scope = who(user_id)
        await check_thread(thread_id, scope["user_id"])
        # A server of the shared memory searches only what belongs to no user (inside the
        # store's indexes), as recall and forget see it.
        shared = scope["user_id"] is None and not any_user
        hits = await _guard(
            memory.search(
                query,
                thread_id=thread_id,
                limit=limit,
                as_of=as_of,
                time_zone=time_zone,
                shared_only=shared,
                kinds=kinds,
                **scope,
            )
        )
        if not any_user:
            known: dict[str, str | None] = {}
            hits = [
                h for h in hits if h.thread_id is None or await owner_of(h.thread_id, known) in (None, scope["user_id"])
            ]
        return {"results": [hit.dump() for hit in hits]}

    async def build_context(
        thread_id: Annotated[str, Field(min_length=1, description="The conversation.")],
        current_input: Annotated[str | None, Field(description="The message being answered.")] = None,
        system_prompt: Annotated[str | None, Field(description="The system prompt to build around.")] = None,
        max_tokens: Annotated[int | None, Field(ge=1, description="The token budget (default the config's).")] = None,
        user_id: Annotated[str | None, Field(description="Whose memory (default: the server's user).")] = None,
        reserve_tokens: Annotated[
            int | None, Field(ge=0, description="Tokens kept free for the reply (default 10% of max_tokens).")
        ] = None,
        pinned: Annotated[
            list[str] | None, Field(description="Texts always sent in the system message, after the prompt.")
        ] = None,
        leaf_id: Annotated[
            str | None, Field(min_length=1, description="Build from this entry's branch instead of the active one.")
        ] = None,
        as_of: Annotated[
            datetime | None,
            Field(description="The moment the turn is read at, ISO 8601 (UTC without an offset; default now)."),
        ] = None,
        time_zone: Annotated[
            str | None, Field(description="The IANA time zone times are read in (default the config's).")
        ] = None,
        brief: Annotated[str | None, Field(description="A brief block to send with the memory context.")] = None,
        strategy: Annotated[
            Literal["recent", "relevant", "hybrid"] | None,
            Field(
                description="How the history is chosen: recent, relevant (by meaning) or hybrid "
                "(recent plus recall of older turns and memory items); default the config's."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """The messages for the next model call of a conversation, within a token budget: the
        system message with core facts and the list of memory files, the history, and what
        memory recalls for current_input."""
        scope = who(user_id)
        await check_thread(thread_id, scope["user_id"])
        pins = list(pinned or [])  # Memory.build_context lists the memory files itself
        built = await _guard(
            memory.build_context(
                thread_id,
                current_input=current_input,
                system_prompt=system_prompt,
                max_tokens=max_tokens,
                reserve_tokens=reserve_tokens,
                pinned=pins or None,
                leaf_id=leaf_id,
                as_of=as_of,
                time_zone=time_zone,
                brief=brief,
                strategy=strategy,
                **scope,
            )
        )
        answer: dict[str, Any] = {
            "messages": to_openai_messages(built.messages),
            "token_count": built.token_count,
            "truncated": built.truncated,
            "strategy": built.strategy,
            "warnings": list(built.warnings),
        }
        if built.errors:
            answer["errors"] = [{"source": e.source, "message": e.message} for e in built.errors]
        return answer

    async def memory_files(
        command: Annotated[
            Literal["view", "create", "str_replace", "insert", "delete", "rename"], Field(description="What to do.")
        ],
        path: Annotated[str | None, Field(description="The file or directory under /memories.")] = None,
        view_range: Annotated[list[int] | None, Field(min_length=2, max_length=2)] = None,
        file_text: Annotated[str | None, Field(description="create: the new file's text.")] = None,
        old_str: Annotated[str | None, Field(description="str_replace: text found exactly once.")] = None,
        new_str: Annotated[str | None, Field(description="str_replace: the replacement.")] = None,
        insert_line: Annotated[int | None, Field(ge=0, description="insert: after this line.")] = None,
        insert_text: Annotated[str | None, Field(description="insert: the text.")] = None,
        old_path: Annotated[str | None, Field(description="rename: from.")] = None,
        new_path: Annotated[str | None, Field(description="rename: to.")] = None,
    ) -> str:
        """Your notes: files under /memories that outlast the conversation (view, create,
        str_replace, insert, delete, rename)."""
        given = {
            "command": command,
            "path": path,
            "view_range": view_range,
            "file_text": file_text,
            "old_str": old_str,
            "new_str": new_str,
            "insert_line": insert_line,
            "insert_text": insert_text,
            "old_path": old_path,
            "new_path": new_path,
        }
        answer = await _guard(file_tool().run({k: v for k, v in given.items() if v is not None}))
        if answer.is_error:
            raise ToolError(answer.content)
        return answer.content

    tools: list[tuple[Callable[..., Awaitable[Any]], str, ToolAnnotations]] = [
        (save_conversation, "save_conversation", _annotations()),
        (remember, "remember", _annotations(idempotent=True)),
        (recall, "recall", _annotations(read_only=True, idempotent=True)),
        (forget, "forget", _annotations(destructive=True, idempotent=True)),
        (search_memory, "search_memory", _annotations(read_only=True, idempotent=True)),
        (build_context, "build_context", _annotations(read_only=True, idempotent=True)),
    ]
    if memory.files is not None:
        # view reads, create adds, str_replace/insert edit, delete/rename take files away
        tools.append((memory_files, "memory", _annotations(destructive=True)))
    for fn, name, hints in tools:
        server.add_tool(fn, name=name, annotations=hints)
    return server


async def _get_thread(memory: Memory, thread_id: str) -> Any:
    """The thread ``thread_id`` of ``memory``'s store, or ``None``."""
    return unwrap(await memory.adapter.get_thread(thread_id))


async def serve(
    config: MemoryConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    user_id: str | None = None,
    agent_id: str | None = None,
    any_user: bool = False,
    token: str | None = None,
    no_auth: bool = False,
    say: Callable[[str], None] | None = None,
) -> None:
    """Open the memory of ``config`` and serve it until the client goes away (stdio) or the
    process is stopped (HTTP, at ``http://host:port/mcp``). A bad config, an unreachable store or
    a refused ``host`` raises before the server starts.

    Over HTTP every request must carry ``Authorization: Bearer <token>``: ``token``, or one made
    at start, printed (through ``say``, default stderr) and written to a file only the owner can
    read (see :mod:`cogitator_memory.server.access`). ``no_auth=True`` turns that off, with a
    warning, and only on a loopback ``host`` (the SDK then also refuses other ``Host`` names,
    against DNS rebinding). Over stdio the client that started the process is the only one, and
    no token is asked. ``user_id`` and ``any_user``: see :func:`create_server`."""
    if transport not in ("stdio", "http"):
        raise InvalidArgumentError("transport", f"must be 'stdio' or 'http', got {transport!r}")
    settled = settle_token(host, token, no_auth) if transport == "http" else None
    async with Memory(config) as memory:
        server = create_server(memory, user_id=user_id, agent_id=agent_id, any_user=any_user)
        if transport == "stdio":
            await server.run_stdio_async()
            return
        security = None
        if settled is None:
            names = sorted(LOOPBACK_NAMES | {url_host(host).lower()})
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[f"{name}:*" for name in names],
                allowed_origins=[f"http://{name}:*" for name in names],
            )
        app: Any = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host, transport_security=security)
        if settled is not None:
            app = BearerAuth(app, settled)
        await run_app(app, name="mcp", host=host, port=port, token=settled, path=HTTP_PATH, token_in_url=False, say=say)


__all__ = [
    "DEFAULT_PORT",
    "HTTP_PATH",
    "MAX_SAVED_CHARS",
    "MAX_SAVED_MESSAGES",
    "SERVER_NAME",
    "SaidMessage",
    "create_server",
    "serve",
]
