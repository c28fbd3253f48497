"""Routes for threads and entries: list, read, page through, fork, rewind, check out, add, redact,
delete. Deleting and redacting go through the cascade, so what memory derived from an entry goes
with it."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request, Response
from pydantic import BaseModel, ConfigDict

from ...cascade import CascadePlan
from ...clock import now
from ...errors import InvalidArgumentError, NotFoundError
from ...result import unwrap
from .parts import cascade_for, memory_of, send, shown_entries, shown_entry

MAX_PAGE = 500
"""The most entries or threads one page holds."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewThreadBody(_Body):
    """A thread to create."""

    agent_id: str
    metadata: dict[str, Any] | None = None
    thread_id: str | None = None


class ForkBody(_Body):
    """Where to fork."""

    at_entry_id: str
    new_thread_id: str | None = None


class RewindBody(_Body):
    """The entry the thread goes back to."""

    to_entry_id: str


class CheckoutBody(_Body):
    """The entry that becomes the active leaf."""

    entry_id: str


class RedactBody(_Body):
    """Why the entry is redacted."""

    reason: str | None = None
    keep_replies: bool = False


def encode_cursor(created_at: datetime, seen: int) -> str:
    """A page cursor: the time of the oldest entry handed out and how many of that time were."""
    raw = json.dumps([created_at.isoformat(), seen]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The ``(created_at, seen)`` of a cursor made by :func:`encode_cursor`."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, seen = json.loads(raw)
        when = datetime.fromisoformat(stamp)
        if when.tzinfo is None or isinstance(seen, bool) or not isinstance(seen, int) or seen < 1:
            raise ValueError
        when + timedelta(microseconds=1)  # a page reads up to just after it: not past year 9999
    except (ValueError, TypeError, OverflowError, json.JSONDecodeError):
        raise InvalidArgumentError("cursor", "is not a cursor this server handed out") from None
    return when, seen


async def entry_page(store: Any, thread_id: str, limit: int, cursor: str | None) -> dict[str, Any]:
    """The newest ``limit`` entries of every branch older than ``cursor``, oldest first.

    Entries made in the same microsecond are not lost between pages: the cursor keeps how many
    of the oldest time were already handed out, and the next page skips exactly those.
    """
    before: datetime | None = None
    seen = 0
    if cursor is not None:
        oldest, seen = decode_cursor(cursor)
        before = oldest + timedelta(microseconds=1)
    rows = unwrap(
        await store.get_entries(thread_id, limit=limit + seen + 1, before=before, types="all", include_tool_calls=True)
    )
    if seen:
        rows = rows[: max(len(rows) - seen, 0)]
    more = len(rows) > limit
    rows = rows[-limit:]
    next_cursor = None
    if more:
        oldest_time = rows[0].created_at
        same = sum(1 for r in rows if r.created_at == oldest_time)
        if before is not None and oldest_time == before - timedelta(microseconds=1):
            same += seen
        next_cursor = encode_cursor(oldest_time, same)
    return {"entries": shown_entries(rows), "next_cursor": next_cursor}


def threads_router() -> APIRouter:
    """The thread and entry routes (mounted under ``/api``)."""
    router = APIRouter(tags=["threads"])

    @router.get("/threads")
    async def list_threads(
        request: Request,
        agent_id: str | None = None,
        user_id: str | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
        cursor: str | None = None,
    ) -> Response:
        """Threads, most recently updated first; ``next_cursor`` reads on."""
        store = memory_of(request).adapter
        page = unwrap(
            await store.list_threads(
                agent_id=agent_id,
                metadata={"user_id": user_id} if user_id is not None else None,
                updated_after=updated_after,
                updated_before=updated_before,
                limit=limit,
                cursor=cursor,
            )
        )
        return send({"threads": page.threads, "next_cursor": page.next_cursor})

    @router.post("/threads", status_code=201)
    async def create_thread(request: Request, body: NewThreadBody) -> Response:
        """A new thread."""
        store = memory_of(request).adapter
        return send(unwrap(await store.create_thread(body.agent_id, body.metadata, body.thread_id)), 201)

    @router.get("/threads/{thread_id:path}/entries")
    async def thread_entries(
        request: Request,
        thread_id: str,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
        cursor: str | None = None,
    ) -> Response:
        """Entries of every branch (the tree), a page at a time from the newest; each carries its
        ``parent_id`` and ``seq``, so pages join into the tree."""
        return send(await entry_page(memory_of(request).adapter, thread_id, limit, cursor))

    @router.get("/threads/{thread_id:path}/path")
    async def thread_path(
        request: Request,
        thread_id: str,
        leaf_id: str | None = None,
        limit: Annotated[int, Query(ge=0, le=MAX_PAGE)] = 100,
        before: datetime | None = None,
    ) -> Response:
        """The branch from the root to ``leaf_id`` (default the active leaf), the newest
        ``limit`` entries of it older than ``before``."""
        entries = unwrap(
            await memory_of(request).adapter.get_path(
                thread_id=thread_id, leaf_id=leaf_id, limit=limit, before=before, types="all", include_tool_calls=True
            )
        )
        return send({"entries": shown_entries(entries)})

    @router.get("/threads/{thread_id:path}")
    async def get_thread(request: Request, thread_id: str) -> Response:
        """One thread (registered after the routes below a thread, so an id may hold ``/``)."""
        thread = unwrap(await memory_of(request).adapter.get_thread(thread_id))
        if thread is None:
            raise NotFoundError(f"thread not found: {thread_id}")
        return send(thread)

    @router.post("/threads/{thread_id:path}/fork", status_code=201)
    async def fork(request: Request, thread_id: str, body: ForkBody) -> Response:
        """A new thread holding the branch up to ``at_entry_id``."""
        store = memory_of(request).adapter
        return send(unwrap(await store.fork_thread(thread_id, body.at_entry_id, body.new_thread_id)), 201)

    @router.post("/threads/{thread_id:path}/rewind")
    async def rewind(request: Request, thread_id: str, body: RewindBody) -> Response:
        """Go back to ``to_entry_id`` (nothing is deleted); memory items that stood only on the
        entries after it are marked stale."""
        memory = memory_of(request)
        counts = await cascade_for(memory).rewind(thread_id, body.to_entry_id)
        thread = unwrap(await memory.adapter.get_thread(thread_id))
        if thread is None:
            raise NotFoundError(f"thread not found: {thread_id}")
        return send({"thread": thread, "counts": counts.dump()})

    @router.post("/threads/{thread_id:path}/checkout")
    async def checkout(request: Request, thread_id: str, body: CheckoutBody) -> Response:
        """Make ``entry_id`` the active leaf."""
        return send(unwrap(await memory_of(request).adapter.checkout(thread_id, body.entry_id)))

    @router.post("/entries", status_code=201)
    async def add_entry(request: Request, body: Annotated[dict[str, Any], Body()]) -> Response:
        """Add an entry (the fields of ``NewMemoryEntry``: ``thread_id``, ``message``, ...)."""
        return send(unwrap(await memory_of(request).adapter.add_entry(body)), 201)

    @router.get("/entries/{entry_id:path}")
    async def get_entry(request: Request, entry_id: str) -> Response:
        """One entry."""
        entry = unwrap(await memory_of(request).adapter.get_entry(entry_id))
        if entry is None:
            raise NotFoundError(f"entry not found: {entry_id}")
        return send(shown_entry(entry))

    @router.post("/entries/{entry_id:path}/redact")
    async def redact_entry(request: Request, entry_id: str, body: RedactBody) -> Response:
        """Redact the entry in place with what memory derived from it (and its replies unless
        ``keep_replies``)."""
        memory = memory_of(request)
        await _require_entry(memory, entry_id)
        redaction: dict[str, Any] = {"at": now()}
        if body.reason:
            redaction["reason"] = body.reason
        counts = await cascade_for(memory).redact_entries([entry_id], redaction, keep_replies=body.keep_replies)
        return send({"counts": counts.dump()})

    @router.delete("/entries/{entry_id:path}")
    async def delete_entry(
        request: Request, entry_id: str, keep_replies: bool = False, dry_run: bool = False
    ) -> Response:
        """Delete the entry with what memory derived from it (and its replies unless
        ``keep_replies``); ``dry_run`` lists what would go."""
        memory = memory_of(request)
        await _require_entry(memory, entry_id)
        cascade = cascade_for(memory)
        if dry_run:
            return send({"plan": _plan(await cascade.plan_entries([entry_id], keep_replies=keep_replies))})
        counts = await cascade.delete_entries([entry_id], keep_replies=keep_replies)
        return send({"counts": counts.dump()})

    return router


async def _require_entry(memory: Any, entry_id: str) -> None:
    if unwrap(await memory.adapter.get_entry(entry_id)) is None:
        raise NotFoundError(f"entry not found: {entry_id}")


def _plan(plan: CascadePlan) -> dict[str, Any]:
    return {"threads": plan.threads, "entries": plan.entries, "entry_count": plan.entry_count}


__all__ = ["MAX_PAGE", "decode_cursor", "encode_cursor", "entry_page", "threads_router"]
