"""SessionManager: a user's conversation on a channel, kept as one long-lived thread.

A session is the thread ``session_<channel_type>_<user_id>``; what the manager knows of it (user,
channel, status, per-session config, when it was last used) sits in the thread's metadata under
``session_*`` keys, each written on its own so that concurrent updates of different fields all
land. Sessions are listed from an index thread (:data:`SESSION_INDEX_THREAD_ID`) whose metadata
holds one key per session. Status changes and deletions are written to the index at once; using a
session puts it back in the index and refreshes it (and the session's ``last_active_at``) at most
once per ``index_refresh_interval``, so on a store with a time to live the index lives as long as a
session is in use.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from ..clock import now
from ..context.history import compaction_of
from ..errors import InvalidArgumentError, NotFoundError
from ..result import unwrap
from ..threads.base import MemoryAdapter
from ..threads.records import Thread
from .records import CompactionError, CompactionResult
from .service import CompactionService

#: The thread listing the sessions.
SESSION_INDEX_THREAD_ID = "session_index"
#: The agent the index thread belongs to.
SESSION_INDEX_AGENT_ID = "cogitator-sessions"
#: What a session's status may be.
SESSION_STATUSES: tuple[str, ...] = ("active", "paused", "archived")
#: Seconds between two refreshes of a session in use (its index line and ``last_active_at``).
DEFAULT_INDEX_REFRESH_INTERVAL = 60.0


def _name(argument: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(argument, f"must be a non-empty string, got {value!r}")
    return value


def session_id_of(channel_type: str, user_id: str) -> str:
    """The id of the thread of ``user_id`` on ``channel_type``: ``session_<channel_type>_<user_id>``."""
    return f"session_{_name('channel_type', channel_type)}_{_name('user_id', user_id)}"


@dataclass(frozen=True, slots=True)
class Session:
    """A user's conversation on a channel: the thread ``id`` and what the manager keeps of it.

    ``message_count`` is the number of messages the thread holds, on every branch, counted when
    the session is read (a compaction's summary is not counted; on a store without branches the
    messages a compaction covered are gone, so they are not counted either).
    """

    id: str
    user_id: str
    channel_type: str
    channel_id: str
    agent_id: str
    status: str
    config: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    last_active_at: datetime | None = None
    message_count: int = 0

    @classmethod
    def of(cls, thread: Thread, message_count: int = 0) -> Session | None:
        """The session a thread holds (with ``message_count``), ``None`` when it is no session's thread."""
        meta = thread.metadata
        user_id = meta.get("session_user_id")
        channel_type = meta.get("session_channel_type")
        if not isinstance(user_id, str) or not isinstance(channel_type, str):
            return None
        config = meta.get("session_config")
        status = meta.get("session_status")
        last = meta.get("session_last_active_at")
        return cls(
            id=thread.id,
            user_id=user_id,
            channel_type=channel_type,
            channel_id=str(meta.get("session_channel_id") or ""),
            agent_id=thread.agent_id,
            status=status if isinstance(status, str) else "active",
            config=dict(config) if isinstance(config, dict) else {},
            created_at=thread.created_at,
            last_active_at=datetime.fromisoformat(last) if isinstance(last, str) else None,
            message_count=message_count,
        )


class SessionManager:
    """Maps channel conversations (user, channel, agent) onto threads of ``memory``; ``compaction``
    (a :class:`CompactionService`) serves :meth:`compact`. See ``docs/compaction.md``."""

    def __init__(
        self,
        memory: MemoryAdapter,
        compaction: CompactionService | None = None,
        *,
        index_refresh_interval: float = DEFAULT_INDEX_REFRESH_INTERVAL,
    ) -> None:
        if compaction is not None and not isinstance(compaction, CompactionService):
            raise InvalidArgumentError("compaction", "must be a CompactionService or None")
        interval = index_refresh_interval
        if isinstance(interval, bool) or not isinstance(interval, int | float) or interval < 0:
            raise InvalidArgumentError("index_refresh_interval", f"must be a number of seconds >= 0, got {interval!r}")
        self.memory = memory
        self.compaction = compaction
        self.index_refresh_interval = float(interval)
        self._refreshed: dict[str, datetime] = {}

    async def get_or_create(self, user_id: str, channel_type: str, channel_id: str, agent_id: str) -> Session:
        """The session of ``user_id`` on ``channel_type``, created (active) when there is none.

        An existing session is returned as it is (an archived one stays archived); its
        ``channel_id`` follows the conversation's latest channel.
        """
        session_id = session_id_of(channel_type, user_id)
        _name("channel_id", channel_id)
        _name("agent_id", agent_id)
        thread = unwrap(await self.memory.get_thread(session_id))
        session = Session.of(thread) if thread is not None else None
        if session is None:
            at = now()
            thread = unwrap(
                await self.memory.create_thread(
                    agent_id,
                    {
                        "session_user_id": user_id,
                        "session_channel_type": channel_type,
                        "session_channel_id": channel_id,
                        "session_status": "active",
                        "session_config": {},
                        "session_last_active_at": at.isoformat(),
                    },
                    thread_id=session_id,
                )
            )
            session = Session.of(thread)
            assert session is not None
            await self._index(session)
            return await self._counted(session)  # the thread may have held messages before it was a session
        if session.channel_id != channel_id:
            session = await self._write(session_id, {"session_channel_id": channel_id})
        return await self._counted(await self._used(session))

    async def get(self, session_id: str) -> Session | None:
        """The session, or ``None`` when there is none (or the thread is no session's)."""
        thread = unwrap(await self.memory.get_thread(_name("session_id", session_id)))
        session = Session.of(thread) if thread is not None else None
        return await self._counted(await self._used(session)) if session is not None else None

    async def update(
        self, session_id: str, *, status: str | None = None, config: dict[str, Any] | None = None
    ) -> Session:
        """Set the session's ``status`` and/or replace its per-session ``config``.

        Raises ``NotFoundError`` for a missing session.
        """
        changes: dict[str, Any] = {}
        if status is not None:
            if status not in SESSION_STATUSES:
                raise InvalidArgumentError("status", f"must be one of {', '.join(SESSION_STATUSES)}, got {status!r}")
            changes["session_status"] = status
        if config is not None:
            if not isinstance(config, dict):
                raise InvalidArgumentError("config", f"must be a dict, got {type(config).__name__}")
            changes["session_config"] = config
        current = await self._require(session_id)
        if not changes:
            return await self._counted(current)
        session = await self._write(session_id, changes)
        await self._index(session)
        return await self._counted(session)

    async def archive(self, session_id: str) -> Session:
        """Mark the session archived (its thread and entries stay)."""
        return await self.update(session_id, status="archived")

    async def delete(self, session_id: str) -> None:
        """Delete the session's thread and its line in the index (a missing session succeeds)."""
        _name("session_id", session_id)
        unwrap(await self.memory.delete_thread(session_id))
        self._refreshed.pop(session_id, None)
        unwrap(
            await self.memory.create_thread(
                SESSION_INDEX_AGENT_ID, {session_id: None}, thread_id=SESSION_INDEX_THREAD_ID
            )
        )

    async def list(self, *, user_id: str | None = None, status: str | None = None, limit: int = 50) -> list[Session]:
        """Sessions of every user (or of ``user_id``), of any status (or ``status``), the most
        recently used first, at most ``limit``."""
        if user_id is not None:
            _name("user_id", user_id)
        if status is not None and status not in SESSION_STATUSES:
            raise InvalidArgumentError("status", f"must be one of {', '.join(SESSION_STATUSES)}, got {status!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidArgumentError("limit", f"must be a positive integer, got {limit!r}")
        index = unwrap(await self.memory.get_thread(SESSION_INDEX_THREAD_ID))
        lines = [
            (key, line)
            for key, line in (index.metadata.items() if index is not None else [])
            if isinstance(line, dict)
            and (user_id is None or line.get("user_id") == user_id)
            and (status is None or line.get("status") == status)
        ]
        lines.sort(key=lambda kv: str(kv[1].get("last_active_at") or ""), reverse=True)
        out: list[Session] = []
        for key, _line in lines:
            thread = unwrap(await self.memory.get_thread(key))
            session = Session.of(thread) if thread is not None else None
            if session is None or (status is not None and session.status != status):
                continue
            out.append(await self._counted(session))
            if len(out) >= limit:
                break
        return out

    async def compact(self, session_id: str, **options: Any) -> CompactionResult:
        """Compact the session's thread with the manager's :class:`CompactionService` (the options
        of :meth:`CompactionService.compact`). Raises :class:`CompactionError` without one."""
        if self.compaction is None:
            raise CompactionError(
                "this SessionManager has no compaction service: pass compaction=CompactionService(...)"
            )
        await self._require(session_id)
        return await self.compaction.compact(session_id, **options)

    # -- internals ------------------------------------------------------------------------

    async def _require(self, session_id: str) -> Session:
        thread = unwrap(await self.memory.get_thread(_name("session_id", session_id)))
        session = Session.of(thread) if thread is not None else None
        if session is None:
            raise NotFoundError(f"session {session_id} not found")
        return session

    async def _counted(self, session: Session) -> Session:
        """The session with its ``message_count`` read from the store."""
        entries = unwrap(await self.memory.get_entries(session.id, types="message"))
        count = sum(1 for e in entries if compaction_of(e) is None)
        return replace(session, message_count=count)

    async def _write(self, session_id: str, changes: dict[str, Any]) -> Session:
        thread = unwrap(await self.memory.update_thread(session_id, changes))
        session = Session.of(thread)
        assert session is not None
        return session

    async def _used(self, session: Session) -> Session:
        """Refresh the session's ``last_active_at`` and index line when they are older than the interval."""
        last = self._refreshed.get(session.id)
        at = now()
        if last is not None and at - last < timedelta(seconds=self.index_refresh_interval):
            return session
        session = await self._write(session.id, {"session_last_active_at": at.isoformat()})
        await self._index(session)
        return session

    async def _index(self, session: Session, *, force: bool = False) -> None:
        line = {
            "user_id": session.user_id,
            "channel_type": session.channel_type,
            "agent_id": session.agent_id,
            "status": session.status,
            "last_active_at": (session.last_active_at or now()).isoformat(),
        }
        # create_thread upserts: it makes the index when missing and merges the line either way.
        unwrap(
            await self.memory.create_thread(
                SESSION_INDEX_AGENT_ID, {session.id: line}, thread_id=SESSION_INDEX_THREAD_ID
            )
        )
        self._refreshed[session.id] = now()


__all__ = [
    "DEFAULT_INDEX_REFRESH_INTERVAL",
    "SESSION_INDEX_AGENT_ID",
    "SESSION_INDEX_THREAD_ID",
    "SESSION_STATUSES",
    "Session",
    "SessionManager",
    "session_id_of",
]
