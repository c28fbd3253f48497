"""Routes for what memory keeps beside the conversation: memory items (as of a time, a slot's
history, activate, mark stale), memory files (list, read, versions with diffs), search, building
a context, the memory tools (``remember``, ``recall``, forgetting facts: the calls of
:class:`~cogitator_memory.runtime.Memory`, the MCP tools and the CLI), and forgetting (a
preview, then the cascade)."""

from __future__ import annotations

import difflib
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from ...errors import InvalidArgumentError, NotFoundError
from ...result import unwrap
from ...threads import tree
from .forget_plan import forget_plan
from .parts import cascade_for, memory_of, send, shown_messages

MAX_ITEMS = 1000
"""The most items one read returns."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ItemIdsBody(_Body):
    """Items to change."""

    ids: list[str] = Field(min_length=1, max_length=MAX_ITEMS)


class StaleBody(ItemIdsBody):
    """Items to let go, and why."""

    because: str | None = None


class _WhoseBody(_Body):
    """A body naming whose memory it is about (``user_id``: none is the shared memory; ``agent_id``:
    default the memory's)."""

    user_id: str | None = None
    agent_id: str | None = None


class RememberBody(_WhoseBody):
    """A fact to save (the ``remember`` tool), in the memory of ``{agent_id, user_id}``."""

    fact: str
    category: str | None = None
    core_fact_key: str | None = None


class ForgetFactsBody(_WhoseBody):
    """The facts to forget by the ``forget`` tool's rule: those holding every word of ``query``."""

    query: str
    all: bool = False


class ContextBody(_WhoseBody):
    """A context to build for the next model call of a thread."""

    thread_id: str
    current_input: str | None = None
    system_prompt: str | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    reserve_tokens: int | None = Field(default=None, ge=0)
    pinned: list[str] | None = None
    leaf_id: str | None = None
    as_of: datetime | None = None
    time_zone: str | None = None
    brief: str | None = None
    strategy: Literal["recent", "relevant", "hybrid"] | None = None


class ForgetBody(_Body):
    """What to forget: a user, a thread, or entries (exactly one of them)."""

    user_id: str | None = None
    thread_id: str | None = None
    entry_ids: list[str] | None = Field(default=None, min_length=1, max_length=MAX_ITEMS)
    keep_replies: bool = False

    def target(self) -> tuple[str, Any]:
        given = [
            (k, v)
            for k, v in (("user_id", self.user_id), ("thread_id", self.thread_id), ("entry_ids", self.entry_ids))
            if v
        ]
        if len(given) != 1:
            raise InvalidArgumentError("body", "name exactly one of user_id, thread_id or entry_ids")
        return given[0]


def _scope(
    agent_id: str | None, user_id: str | None, project_id: str | None, thread_id: str | None, memory: Any
) -> dict[str, Any]:
    scope: dict[str, Any] = {"agent_id": agent_id or memory.agent_id}
    for key, value in (("user_id", user_id), ("project_id", project_id), ("thread_id", thread_id)):
        if value is not None:
            scope[key] = value
    return scope


def memory_router() -> APIRouter:
    """The routes for items, files, search, context and forgetting (mounted under ``/api``)."""
    router = APIRouter()

    @router.get("/items", tags=["items"])
    async def query_items(
        request: Request,
        agent_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        thread_id: str | None = None,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        status: Annotated[list[str] | None, Query()] = None,
        kind: Annotated[list[str] | None, Query()] = None,
        subject: str | None = None,
        exact: bool = False,
        limit: Annotated[int, Query(ge=1, le=MAX_ITEMS)] = 200,
    ) -> Response:
        """The items a scope sees as they held at ``as_of`` as memory knew them at ``known_at``
        (both default now); ``status`` may ask for suggested or stale ones too (``all``: every
        status)."""
        memory = memory_of(request)
        statuses: Any = status
        if status == ["all"]:
            statuses = "all"
        items = await memory.items.query(
            _scope(agent_id, user_id, project_id, thread_id, memory),
            as_of=as_of,
            known_at=known_at,
            statuses=statuses,
            kinds=kind,
            subject=subject,
            exact=exact,
            limit=limit,
        )
        return send({"items": items})

    @router.get("/items/history", tags=["items"])
    async def item_history(
        request: Request,
        subject: str,
        attribute: str,
        agent_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        thread_id: str | None = None,
    ) -> Response:
        """Every state of one slot (``subject`` + ``attribute``) kept in exactly the scope, closed
        ones and stale ones included, oldest first."""
        memory = memory_of(request)
        items = await memory.items.history(
            _scope(agent_id, user_id, project_id, thread_id, memory),
            {"subject": subject, "attribute": attribute},
            statuses="all",
        )
        return send({"items": items})

    @router.post("/items/activate", tags=["items"])
    async def activate(request: Request, body: ItemIdsBody) -> Response:
        """Make suggested items active (a person reviewed them)."""
        return send({"activated": await memory_of(request).items.activate(body.ids)})

    @router.post("/items/stale", tags=["items"])
    async def mark_stale(request: Request, body: StaleBody) -> Response:
        """Let items go without deleting them."""
        because = body.because or "marked stale in the inspector"
        return send({"stale": await memory_of(request).items.mark_stale(body.ids, because)})

    def files_of(request: Request) -> Any:
        files = memory_of(request).files
        if files is None:
            raise InvalidArgumentError("files", "memory files are turned off in this memory's config")
        return files

    @router.get("/files", tags=["files"])
    async def list_files(
        request: Request,
        agent_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        prefix: str = "/memories",
    ) -> Response:
        """The files a scope sees under ``prefix``, with their text."""
        memory = memory_of(request)
        access = {"scope": _scope(agent_id, user_id, project_id, None, memory), "read_only": True}
        found = await files_of(request).list(access, prefix)
        return send({"files": found})

    @router.get("/files/history", tags=["files"])
    async def file_history(
        request: Request,
        path: str,
        agent_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
    ) -> Response:
        """Every version of the file at ``path``, oldest first, each with a unified diff from the
        version before it."""
        memory = memory_of(request)
        access = {"scope": _scope(agent_id, user_id, project_id, None, memory), "read_only": True}
        versions = await files_of(request).history(access, path)
        shown: list[dict[str, Any]] = []
        before = ""
        for version in versions:
            text = version.content or ""
            diff = "".join(
                difflib.unified_diff(
                    before.splitlines(keepends=True), text.splitlines(keepends=True), "before", "after", n=2
                )
            )
            shown.append({"version": version, "diff": diff})
            before = text
        return send({"versions": shown})

    @router.get("/search", tags=["search"])
    async def search(
        request: Request,
        q: Annotated[str, Query(min_length=1, max_length=2000)],
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        limit: Annotated[int, Query(ge=1, le=100)] = 10,
        as_of: datetime | None = None,
        time_zone: str | None = None,
        shared_only: bool = False,
        kinds: Annotated[list[str] | None, Query()] = None,
    ) -> Response:
        """Turns and memory items that answer ``q``, best first (``as_of``: when it is asked, the
        time it names read from then in ``time_zone``). Without ``user_id`` every user's memory
        is searched (the inspector is an operator's view); ``shared_only=true``: only what
        belongs to no user; ``kinds`` (repeated: ``kinds=fact&kinds=item``): only those kinds."""
        hits = await memory_of(request).search(
            q,
            user_id=user_id,
            agent_id=agent_id,
            thread_id=thread_id,
            limit=limit,
            as_of=as_of,
            time_zone=time_zone,
            shared_only=shared_only,
            kinds=kinds,  # type: ignore[arg-type]  # checked by Memory.search (InvalidArgumentError: 400)
        )
        return send({"hits": [h.dump() for h in hits]})

    @router.post("/context", tags=["context"])
    async def build_context(request: Request, body: ContextBody) -> Response:
        """The messages of the next model call of a thread, within ``max_tokens``, built with
        ``strategy`` (default the config's); an unknown thread is 404."""
        memory = memory_of(request)
        if unwrap(await memory.adapter.get_thread(tree.check_id("thread_id", body.thread_id))) is None:
            raise NotFoundError(f"thread not found: {body.thread_id}")
        built = await memory.build_context(
            body.thread_id,
            user_id=body.user_id,
            agent_id=body.agent_id,
            current_input=body.current_input,
            system_prompt=body.system_prompt,
            max_tokens=body.max_tokens,
            reserve_tokens=body.reserve_tokens,
            pinned=body.pinned,
            leaf_id=body.leaf_id,
            as_of=body.as_of,
            time_zone=body.time_zone,
            brief=body.brief,
            strategy=body.strategy,
        )
        shown = {
            "messages": shown_messages(built.messages),
            "memory_context": built.memory_context,
            "partitions": built.partitions,
            "token_count": built.token_count,
            "truncated": built.truncated,
            "strategy": built.strategy,
            "entry_ids": [e.id for e in built.entries],
            "recalled": {k: [getattr(v, "id", v) for v in vs] for k, vs in (built.recalled or {}).items()},
            "errors": [{"source": e.source, "message": e.message} for e in built.errors],
            "warnings": built.warnings,
            "metadata": built.metadata,
        }
        return send(to_jsonable_python(shown, fallback=str, exclude_none=True))

    @router.post("/remember", tags=["facts"])
    async def remember(request: Request, body: RememberBody) -> Response:
        """Save a fact (:meth:`Memory.remember <cogitator_memory.runtime.Memory.remember>`, the
        ``remember`` tool): the same fact again updates it; ``core_fact_key`` keeps it as that
        core fact too. The tool's answer: ``{saved, id, fact, category, updated, core_fact?}``."""
        answer = await memory_of(request).remember(
            body.fact,
            category=body.category,
            core_fact_key=body.core_fact_key,
            user_id=body.user_id,
            agent_id=body.agent_id,
        )
        return send(answer)

    @router.get("/recall", tags=["facts"])
    async def recall(
        request: Request,
        q: Annotated[str, Query(min_length=1, max_length=2000)],
        user_id: str | None = None,
        agent_id: str | None = None,
    ) -> Response:
        """The saved facts matching ``q`` and every core fact (:meth:`Memory.recall
        <cogitator_memory.runtime.Memory.recall>`, the ``recall`` tool): ``{results,
        core_facts}``. Without ``user_id``: the shared memory, as the tool sees it."""
        return send(await memory_of(request).recall(q, user_id=user_id, agent_id=agent_id))

    @router.post("/forget/facts", tags=["forget"])
    async def forget_facts(request: Request, body: ForgetFactsBody) -> Response:
        """Delete the saved facts holding every word of ``query`` and the core facts holding them
        (:meth:`Memory.forget <cogitator_memory.runtime.Memory.forget>`, the ``forget`` tool, by
        its rules): the tool's answer ``{forgotten, facts, core_fact_keys}``; a broad query
        deletes nothing and answers ``too_broad`` and a ``message`` unless ``all``; an empty or
        "everything" query is refused (400)."""
        answer = await memory_of(request).forget(
            body.query, take_all=body.all, user_id=body.user_id, agent_id=body.agent_id
        )
        return send(answer)

    @router.post("/forget/preview", tags=["forget"])
    async def forget_preview(request: Request, body: ForgetBody) -> Response:
        """Everything :func:`forget` would take, named and counted, changing nothing: the
        cascade's plan (``threads``, ``entries``) and what memory derived from them (items, core
        facts, facts, graph nodes and edges, entities, vectors, file versions, files; see
        :func:`~cogitator_memory.server.rest.forget_plan.forget_plan`)."""
        memory = memory_of(request)
        key, value = body.target()
        plan = await forget_plan(
            cascade_for(memory),
            key,
            value,
            agent_id=memory.agent_id,
            keep_replies=body.keep_replies,
            recall_index=getattr(memory, "indexer", None) is not None,
        )
        return send(plan)

    @router.post("/forget", tags=["forget"])
    async def forget(request: Request, body: ForgetBody) -> Response:
        """Forget a user, a thread or entries with everything memory derived from them, through
        the same calls as the Python API (:meth:`Memory.forget_user`, :meth:`Memory.delete_thread`,
        :meth:`Memory.delete_entries`): the same cascade, agents, core facts and byte clearing."""
        memory = memory_of(request)
        key, value = body.target()
        if key == "user_id":
            counts = await memory.forget_user(value)
        elif key == "thread_id":
            counts = await memory.delete_thread(value)
        else:
            counts = await memory.delete_entries(value, keep_replies=body.keep_replies)
        return send({"counts": counts.dump()})

    return router


__all__ = ["MAX_ITEMS", "memory_router"]
