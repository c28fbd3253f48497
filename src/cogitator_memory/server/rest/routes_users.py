"""Routes for what memory believes: a user as a whole (``GET /api/users/{user_id}``) and every
state of the slots a scope sees (``GET /api/items/states``), superseded values with the interval
they held and what replaced them. Reads only; see :mod:`.beliefs`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from ...items.records import check_scope
from .beliefs import MAX_STATES, slot_states, user_view
from .parts import memory_of, send


def users_router() -> APIRouter:
    """The user view and the slot states (mounted under ``/api``)."""
    router = APIRouter(tags=["users"])

    @router.get("/items/states", tags=["items"])
    async def item_states(
        request: Request,
        agent_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        thread_id: str | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_STATES)] = 1000,
    ) -> Response:
        """Every state (suggested, active, superseded, stale) of every slot the scope sees,
        grouped by slot, newest first; each state says whether it is ``held_now`` and a
        superseded one what ``replaced_by`` it."""
        memory = memory_of(request)
        given = {"user_id": user_id, "project_id": project_id, "thread_id": thread_id}
        scope = check_scope("scope", {"agent_id": agent_id or memory.agent_id, **{k: v for k, v in given.items() if v}})
        return send(await slot_states(memory.items, scope, limit=limit))

    @router.get("/users/{user_id:path}")
    async def user(
        request: Request,
        user_id: str,
        agent_id: str | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_STATES)] = 1000,
    ) -> Response:
        """What memory believes about the user now: their threads, core facts, memory items
        (every state of each slot, with quotes) and the knowledge graph's facts, entities and
        relations their scope sees, for ``agent_id`` (default the memory's) and the agents of
        their threads. A user memory holds nothing of is an empty view."""
        return send(await user_view(memory_of(request), user_id, agent_id=agent_id, limit=limit))

    return router


__all__ = ["users_router"]
