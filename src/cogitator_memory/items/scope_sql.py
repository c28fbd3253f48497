"""The scope conditions of the SQL engines (SQLite, PostgreSQL)' queries of scoped records (memory items, memory file
versions), written once: the scope keys asked for, or the agent and the parts of ``within`` that
are set. Each engine gives its own spelling of a parameter and of "one of these keys"."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol

from .records import ITEM_KINDS, ItemQuery


class _Within(Protocol):
    user_id: str | None
    project_id: str | None
    thread_id: str | None


class ScopedQuery(Protocol):
    """What a query of scoped records names: scope keys, or an agent and a scope ``within``."""

    @property
    def scope_keys(self) -> Collection[str] | None: ...
    @property
    def agent_id(self) -> str | None: ...
    @property
    def within(self) -> Any: ...


def scope_conditions(
    query: ScopedQuery, *, param: str, keys_in: Callable[[list[str]], tuple[str, list[Any]]]
) -> tuple[list[str], list[Any]]:
    """The conditions (and their parameters) that keep ``query`` to its scope: ``keys_in`` spells
    "scope_key is one of these" for the engine, ``param`` is its parameter mark (``?``, ``%s``)."""
    if query.scope_keys is not None:
        clause, params = keys_in(sorted(query.scope_keys))
        return [clause], params
    where = [f"agent_id = {param}"]
    params = [query.agent_id]
    within: _Within = query.within
    assert within is not None
    for column, value in (
        ("user_id", within.user_id),
        ("project_id", within.project_id),
        ("thread_id", within.thread_id),
    ):
        if value is not None:
            where.append(f"{column} = {param}")
            params.append(value)
    return where, params


#: The most index walks a query of the latest started items makes (scope keys times kinds),
#: far under the engines' limits of bound parameters.
MAX_START_WALKS = 48


def walks_by_start(query: ItemQuery) -> bool:
    """Whether an SQL engine answers ``query`` (``order="start"`` with a ``limit``) by walking its
    index of items by scope, kind and start from the newest end once per scope key and kind:
    scope keys, no narrower index to read instead (slot, subject, entries), and few enough walks."""
    if query.order != "start" or not query.limit or query.scope_keys is None:
        return False
    if query.slot_keys is not None or query.subject_key is not None or query.entry_ids is not None:
        return False
    kinds = len(query.kinds) if query.kinds is not None else len(ITEM_KINDS)
    return len(query.scope_keys) * kinds <= MAX_START_WALKS


def start_walks(query: ItemQuery) -> list[tuple[str, str]]:
    """The ``(scope key, kind)`` of each walk of a query :func:`walks_by_start` answers."""
    assert query.scope_keys is not None
    kinds = sorted(query.kinds if query.kinds is not None else ITEM_KINDS)
    return [(key, kind) for key in sorted(query.scope_keys) for kind in kinds]


def sqlite_scope(query: ScopedQuery) -> tuple[list[str], list[Any]]:
    """:func:`scope_conditions` in SQLite's spelling (``?``, ``scope_key IN (?, ...)``)."""
    return scope_conditions(
        query, param="?", keys_in=lambda keys: (f"scope_key IN ({','.join('?' * len(keys))})", list(keys))
    )


def postgres_scope(query: ScopedQuery) -> tuple[list[str], list[Any]]:
    """:func:`scope_conditions` in PostgreSQL's spelling (``%s``, ``scope_key = ANY(...)``)."""
    return scope_conditions(query, param="%s", keys_in=lambda keys: ("scope_key = ANY(%b::text[])", [keys]))


__all__ = [
    "MAX_START_WALKS",
    "ScopedQuery",
    "postgres_scope",
    "scope_conditions",
    "sqlite_scope",
    "start_walks",
    "walks_by_start",
]
