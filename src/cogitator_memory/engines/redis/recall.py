"""The recall index in Redis: the primitives of :class:`~cogitator_memory.index.base.RecallIndexMixin`
as Lua scripts (:mod:`.recall_scripts`), mixed into
:class:`~cogitator_memory.engines.redis.threads.RedisAdapter`.

The server has no search module to lean on, so the index is kept as plain structures: a hash
per record (the fields searches filter by, its terms and its JSON), a hash per term of record
id -> term count, record length, scope and write sequence (the postings), sorted sets by
``said_at`` (all records, by user, by thread), sorted sets of the records naming a time, and a
stats hash with the record count, total length and last write sequence that every write keeps.
A keyword search is one script that reads the postings of the query's terms only (with
``newest``, only those of the records written last, by sequence), checks each record they name
against the scope once, sums BM25 and keeps the best ``limit`` in a heap; a time search walks
the scope's ``said_at`` set newest first and stops after ``limit`` hits. Every write is one
script, so it is all or nothing. On a cluster every key carries the adapter prefix's hash tag:
the whole index of a prefix lives in one slot (one node holds it and serves all its searches).
Records do not expire: the adapter's ``ttl`` applies to threads and entries only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...clock import to_micros
from ...errors import InvalidArgumentError
from ...index.base import RECALL_BM25, RecallIndexMixin
from ...index.records import RECALL_STATUSES, RecallFilter, RecallRecord
from . import recall_scripts as lua

if TYPE_CHECKING:
    from .scripts import LuaScript


def _micros(value: datetime | None) -> str:
    return "" if value is None else str(to_micros(value))


def _record(body: str, terms: str) -> RecallRecord:
    """A record from its stored JSON (without its terms) and its terms (a JSON array)."""
    return RecallRecord.model_validate_json(body[:-1] + ',"terms":' + terms + "}")


def _records(reply: Sequence[str]) -> list[RecallRecord]:
    """Records from a script's flat answer: body, terms, body, terms..."""
    return [_record(reply[i], reply[i + 1]) for i in range(0, len(reply), 2)]


def _filter_args(flt: RecallFilter) -> list[str]:
    """The filter as the scripts' five arguments (see :mod:`.recall_scripts`)."""
    return [
        flt.agent_id or "",
        flt.user_id or "",
        flt.thread_id or "",
        "" if flt.kinds is None else " ".join(flt.kinds),
        " ".join(flt.statuses),
    ]


def _lets_all_through(flt: RecallFilter) -> bool:
    no_scope = flt.agent_id is None and flt.user_id is None and flt.thread_id is None
    return no_scope and flt.kinds is None and set(RECALL_STATUSES) <= set(flt.statuses)


class RedisRecallIndex(RecallIndexMixin):
    """The recall-index half of :class:`~cogitator_memory.engines.redis.threads.RedisAdapter`."""

    if TYPE_CHECKING:  # provided by the adapter
        key_prefix: str

        async def _run(self, script: LuaScript, keys: Sequence[str], args: Sequence[Any]) -> Any: ...

        def _guard(self) -> Any: ...

        @property
        def client(self) -> Any: ...

    def _recall_keys(self) -> list[str]:
        """The key every recall script declares (the stats hash): it routes the script to the
        slot of the prefix on a cluster."""
        return [f"{self.key_prefix}recall:stats"]

    def _recall_state_key(self) -> str:
        return f"{self.key_prefix}recall:state"

    async def _recall_put(self, records: list[RecallRecord]) -> None:
        args: list[Any] = []
        for record in records:
            args += [
                record.id,
                record.kind,
                record.agent_id or "",
                record.user_id or "",
                record.thread_id or "",
                record.status,
                to_micros(record.said_at),
                _micros(record.time_start),
                _micros(record.time_end),
                # every occurrence, as the scripts count them (read back, each once with its count)
                json.dumps(
                    [t for t, n in zip(record.terms, record.term_counts, strict=True) for _ in range(n)],
                    ensure_ascii=False,
                    separators=(",", ":"),
                ),
                record.model_dump_json(exclude={"terms", "term_counts"}, exclude_none=True),
            ]
        await self._run(lua.PUT, self._recall_keys(), args)

    async def _recall_get(self, ids: list[str]) -> list[RecallRecord]:
        return _records(await self._run(lua.GET, self._recall_keys(), ids))

    async def _recall_delete(self, ids: list[str]) -> int:
        return int(await self._run(lua.DELETE, self._recall_keys(), ids))

    async def _recall_delete_scope(self, key: str, value: str) -> int:
        return int(await self._run(lua.DELETE_SCOPE, self._recall_keys(), [key, value]))

    async def _recall_stats(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        reply = await self._run(lua.STATS_OF, self._recall_keys(), terms)
        return int(reply[0]), int(reply[1]), {term: int(n) for term, n in zip(terms, reply[2:], strict=True)}

    async def _recall_keyword(
        self,
        weights: list[tuple[str, float]],
        avg_len: float,
        flt: RecallFilter,
        limit: int,
        newest: int | None = None,
    ) -> list[tuple[RecallRecord, float]]:
        args: list[Any] = [
            repr(avg_len),
            repr(RECALL_BM25.k1),
            repr(RECALL_BM25.b),
            limit,
            newest or 0,
            *_filter_args(flt),
        ]
        for term, idf in weights:
            args += [term, repr(idf)]
        reply = await self._run(lua.KEYWORD, self._recall_keys(), args)
        return [(_record(reply[i + 2], reply[i + 3]), float(reply[i + 1])) for i in range(0, len(reply), 4)]

    async def _recall_time(self, start: datetime, end: datetime, flt: RecallFilter, limit: int) -> list[RecallRecord]:
        args = [to_micros(start), to_micros(end), limit, *_filter_args(flt)]
        return _records(await self._run(lua.TIME, self._recall_keys(), args))

    async def _recall_count(self, flt: RecallFilter) -> int:
        args = [*_filter_args(flt), "1" if _lets_all_through(flt) else "0"]
        return int(await self._run(lua.COUNT, self._recall_keys(), args))

    async def _recall_page(self, cursor: str | None, limit: int) -> tuple[list[RecallRecord], str | None]:
        # ZSCAN of the set of every record: the cursor is the server's (a number), which walks
        # each member held throughout once; a page is about ``limit`` ids (a small set at once)
        if cursor is not None and not cursor.isdigit():
            raise InvalidArgumentError("cursor", "must be a page's next_cursor (text) or None")
        async with self._guard():
            after, members = await self.client.zscan(
                f"{self.key_prefix}recall:said", cursor=int(cursor or 0), count=limit
            )
        ids = [m[0] if isinstance(m, tuple | list) else m for m in members]
        records = await self._recall_get(ids) if ids else []
        return records, (None if int(after) == 0 else str(after))

    async def _recall_state_get(self, key: str) -> str | None:
        async with self._guard():
            value = await self.client.hget(self._recall_state_key(), key)
        return None if value is None else str(value)

    async def _recall_state_set(self, key: str, value: str) -> None:
        async with self._guard():
            await self.client.hset(self._recall_state_key(), key, value)


__all__ = ["RedisRecallIndex"]
