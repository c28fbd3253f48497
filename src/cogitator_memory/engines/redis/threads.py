"""``RedisAdapter``: threads as trees in Redis, on a standalone server or a Redis Cluster.

Every write that touches several keys is one Lua script (:mod:`.redis_scripts`), called by
EVALSHA (and loaded on the first ``NOSCRIPT``), so it is atomic and one round trip. In cluster
mode the key prefix carries a hash tag (``{cogitator}:``), so all keys of one adapter live in one
slot and the scripts may touch them together.

The driver, ``redis`` (``redis.asyncio``), is imported in :meth:`RedisAdapter.connect`; without it
``connect()`` fails with the pip command that installs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit

from ...clock import from_micros, to_micros
from ...errors import (
    ConflictError,
    InvalidArgumentError,
    MemoryStoreError,
    MissingDriverError,
    NotConnectedError,
    NotFoundError,
    StoreUnavailableError,
)
from ...lifecycle import check_connection_url, keep_cancellations
from ...result import MemoryResult, ok
from ...threads import tree
from ...threads.base import BaseMemoryAdapter
from ...threads.records import FORKED_FROM_KEY, FORKS_KEY, MemoryEntry, NewMemoryEntry, Thread
from ...threads.tree import build_entry
from . import scripts as lua
from .files import RedisFiles
from .items import RedisItems
from .recall import RedisRecallIndex

DEFAULT_KEY_PREFIX = "cogitator:"
DEFAULT_PORT = 6379
_FORK_RETRIES = 20
#: Thread ids the backfill of the users' sets reads per ZSCAN step and indexes per script.
_BACKFILL_BATCH = 500


def cluster_prefix(prefix: str) -> str:
    """The key prefix as used on a cluster: wrapped in a hash tag unless it has one.

    ``cogitator:`` becomes ``{cogitator}:``, ``myapp`` becomes ``{myapp}``, ``{app}:x:`` stays.
    """
    first = prefix.find("{")
    if first >= 0 and prefix.find("}", first + 1) > first + 1:
        return prefix
    base = prefix[:-1] if prefix.endswith(":") else prefix
    return "{" + base + "}" + (":" if prefix.endswith(":") else "")


def parse_node(node: object, index: int) -> tuple[str, int]:
    """``(host, port)`` of a cluster node given as ``{"host", "port"}`` or ``"host:port"``."""
    name = f"cluster.nodes[{index}]"
    host: object
    port: object
    if isinstance(node, str):
        host, sep, port = node.rpartition(":")
        if not sep:
            host, port = node, DEFAULT_PORT
    elif isinstance(node, Mapping):
        host, port = node.get("host"), node.get("port", DEFAULT_PORT)
    else:
        raise InvalidArgumentError(name, f"must be {{'host': ..., 'port': ...}} or 'host:port', got {node!r}")
    if not isinstance(host, str) or not host:
        raise InvalidArgumentError(name, f"needs a host, got {node!r}")
    try:
        number = int(port)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise InvalidArgumentError(name, f"port must be an integer, got {port!r}") from None
    if isinstance(port, bool) or not 0 < number < 65536:
        raise InvalidArgumentError(name, f"port must be 1-65535, got {port!r}")
    return host.strip("[]"), number


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(name, f"must be a number of seconds > 0, got {value!r}")
    return float(value)


def _thread(fields: Mapping[str, str]) -> Thread:
    metadata = {key[2:]: json.loads(value) for key, value in fields.items() if key.startswith("m:")}
    return Thread(
        id=fields["id"],
        agent_id=fields["a"],
        metadata=metadata,
        created_at=from_micros(int(fields["c"])),
        updated_at=from_micros(int(fields["u"])),
        active_leaf_id=fields.get("l") or None,
    )


def _thread_from_flat(flat: Sequence[str]) -> Thread:
    return _thread(dict(zip(flat[::2], flat[1::2], strict=True)))


def _entry(parent: str | None, seq: int | str, body: str) -> MemoryEntry:
    """An entry from its stored body (which leaves out ``seq`` and ``parent_id``)."""
    head = '{"seq":' + str(int(seq))
    if parent:
        head += ',"parent_id":' + json.dumps(parent)
    return MemoryEntry.model_validate_json(head + "," + body[1:])


def _entries(flat: Sequence[str], start: int = 1) -> list[MemoryEntry]:
    """Entries from a script's flat (id, parent, seq, body) groups."""
    return [_entry(flat[i + 1], flat[i + 2], flat[i + 3]) for i in range(start, len(flat), 4)]


def _body(entry: MemoryEntry) -> str:
    return entry.model_dump_json(exclude_none=True, exclude={"seq", "parent_id"})


def _meta_args(metadata: Mapping[str, Any]) -> list[str]:
    args: list[str] = []
    for key, value in metadata.items():
        args.append("m:" + key)
        args.append(json.dumps(value, separators=(",", ":")))
    return args


def _types_args(types: frozenset[str] | None) -> list[str]:
    return [] if types is None else sorted(types)


@keep_cancellations
class RedisAdapter(RedisRecallIndex, RedisFiles, RedisItems, BaseMemoryAdapter):
    """A thread store in Redis (standalone or cluster), on ``redis.asyncio``.

    Connect with ``url`` (``redis://[user:password@]host:port/db``, ``rediss://`` for TLS), or
    ``host`` + ``port``, or ``cluster={"nodes": [{"host": ..., "port": ...}, "host:port", ...]}``.
    ``key_prefix`` (default ``cogitator:``) starts every key; on a cluster it is wrapped in a hash
    tag. ``ttl`` (seconds, default 0: never) expires threads and entries that no write touched for
    that long. ``socket_timeout`` / ``connect_timeout`` bound each command and each connection
    attempt, ``retries`` retries a command on a connection error, and at most
    ``max_connections`` commands run at once (the others wait their turn).
    """

    provider: ClassVar[str] = "redis"

    def __init__(
        self,
        *,
        url: str | None = None,
        host: str | None = None,
        port: int | None = None,
        cluster: Mapping[str, Any] | None = None,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        ttl: int | float = 0,
        username: str | None = None,
        password: str | None = None,
        socket_timeout: float = 5.0,
        connect_timeout: float = 5.0,
        retries: int = 2,
        max_connections: int = 50,
        provider: str | None = None,
    ) -> None:
        super().__init__()
        if provider not in (None, "redis"):
            raise InvalidArgumentError("provider", f"must be 'redis', got {provider!r}")
        chosen = [name for name, value in (("url", url), ("host", host), ("cluster", cluster)) if value is not None]
        if len(chosen) > 1:
            raise InvalidArgumentError(chosen[1], f"give one of url, host or cluster, not {' and '.join(chosen)}")
        if port is not None and host is None:
            raise InvalidArgumentError("port", "needs host")
        self.nodes: list[tuple[str, int]] = []
        self.url: str | None = None
        if cluster is not None:
            if not isinstance(cluster, Mapping):
                raise InvalidArgumentError("cluster", "must be a dict with 'nodes'")
            nodes = cluster.get("nodes")
            if isinstance(nodes, str) or not isinstance(nodes, Sequence) or not nodes:
                raise InvalidArgumentError("cluster.nodes", "must be a non-empty list of nodes")
            self.nodes = [parse_node(node, i) for i, node in enumerate(nodes)]
        elif url is not None:
            if not isinstance(url, str) or urlsplit(url).scheme not in ("redis", "rediss", "unix"):
                raise InvalidArgumentError("url", "must be a redis://, rediss:// or unix:// URL")
            check_connection_url(url, "url")
            try:
                urlsplit(url).port  # noqa: B018 - validates the port
            except ValueError:  # the message would quote the text after the ':', maybe a password
                raise InvalidArgumentError(
                    "url", "the port is not a number from 0 to 65535 (percent-encode '?', '#' and '/' in a password)"
                ) from None
            self.url = url
        else:
            if host is not None and (not isinstance(host, str) or not host):
                raise InvalidArgumentError("host", f"must be a host name, got {host!r}")
            number = DEFAULT_PORT if port is None else port
            if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 65536:
                raise InvalidArgumentError("port", f"must be an integer 1-65535, got {port!r}")
            self.nodes = [(host or "localhost", number)]
        if not isinstance(key_prefix, str):
            raise InvalidArgumentError("key_prefix", f"must be a string, got {type(key_prefix).__name__}")
        if cluster is not None and not key_prefix:
            raise InvalidArgumentError("key_prefix", "must not be empty on a cluster")
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) or ttl < 0:
            raise InvalidArgumentError("ttl", f"must be a number of seconds >= 0, got {ttl!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidArgumentError("retries", f"must be an integer >= 0, got {retries!r}")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise InvalidArgumentError("max_connections", f"must be an integer > 0, got {max_connections!r}")
        self.is_cluster = cluster is not None
        self.key_prefix = cluster_prefix(key_prefix) if self.is_cluster else key_prefix
        self.ttl = math.ceil(ttl)
        self.username = username
        self.password = password
        self.socket_timeout = _positive("socket_timeout", socket_timeout)
        self.connect_timeout = _positive("connect_timeout", connect_timeout)
        self.retries = retries
        self.max_connections = max_connections
        self._client: Any = None
        self._gate: asyncio.Semaphore | None = None
        self._noscript: type[Exception] = Exception
        self._timeouts: tuple[type[Exception], ...] = (TimeoutError,)

    # ----- keys ----------------------------------------------------------------------------

    def _thread_key(self, thread_id: str) -> str:
        return f"{self.key_prefix}thread:{thread_id}"

    def _index_key(self, thread_id: str) -> str:
        return f"{self.key_prefix}entries:{thread_id}"

    def _entry_key(self, entry_id: str) -> str:
        return f"{self.key_prefix}entry:{entry_id}"

    def _threads_key(self) -> str:
        return f"{self.key_prefix}threads"

    def _agent_key(self, agent_id: str) -> str:
        return f"{self.key_prefix}agent:{agent_id}"

    def _user_key(self, user_id: str) -> str:
        return f"{self.key_prefix}user:{user_id}"

    def _users_indexed_key(self) -> str:
        return f"{self.key_prefix}users:indexed"

    @property
    def where(self) -> str:
        """Where the adapter connects, for messages (no password)."""
        if self.url is not None:
            parts = urlsplit(self.url)
            return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}{parts.path}"
        nodes = ",".join(f"{h}:{p}" for h, p in self.nodes)
        return f"cluster {nodes}" if self.is_cluster else nodes

    @property
    def client(self) -> Any:
        """The ``redis.asyncio`` client (``Redis`` or ``RedisCluster``) while connected."""
        if self._client is None:
            raise NotConnectedError("redis store is not connected: call connect() first")
        return self._client

    # ----- lifecycle -----------------------------------------------------------------------

    async def _connect(self) -> None:
        try:
            import redis.asyncio as aioredis
            from redis.asyncio.cluster import ClusterNode, RedisCluster
            from redis.asyncio.retry import Retry
            from redis.backoff import ExponentialBackoff
            from redis.exceptions import NoScriptError
            from redis.exceptions import TimeoutError as RedisTimeoutError
        except ImportError:
            raise MissingDriverError("RedisAdapter", "redis", "redis") from None
        self._noscript = NoScriptError
        self._timeouts = (RedisTimeoutError, TimeoutError)
        retry = Retry(ExponentialBackoff(cap=0.5, base=0.05), self.retries)
        common: dict[str, Any] = {
            "decode_responses": True,
            "socket_timeout": self.socket_timeout,
            "socket_connect_timeout": self.connect_timeout,
            "max_connections": self.max_connections,
            "retry": retry,
            "username": self.username,
            "password": self.password,
        }
        client: Any
        if self.is_cluster:
            client = RedisCluster(
                startup_nodes=[ClusterNode(host, port) for host, port in self.nodes],
                **common,
            )
        elif self.url is not None:
            overrides = {k: v for k, v in common.items() if k not in ("username", "password") or v is not None}
            client = aioredis.Redis.from_url(self.url, **overrides)
        else:
            host, port = self.nodes[0]
            client = aioredis.Redis(host=host, port=port, **common)
        try:
            async with asyncio.timeout(self.connect_timeout + self.socket_timeout):
                if self.is_cluster:
                    await client.initialize()
                await self._ping_client(client)
        except BaseException:
            await self._close(client)
            raise
        self._client = client
        self._gate = asyncio.Semaphore(self.max_connections)

    @staticmethod
    async def _close(client: Any) -> None:
        with contextlib.suppress(Exception):
            await client.aclose()

    async def _disconnect(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _ping(self) -> None:
        async with self._guard():
            await self._ping_client(self.client)

    async def _ping_client(self, client: Any) -> None:
        """PING the server; on a cluster, every primary."""
        if self.is_cluster:
            await client.ping(target_nodes=client.PRIMARIES)
        else:
            await client.ping()

    def _guard(self) -> asyncio.Semaphore:
        if self._gate is None:
            raise NotConnectedError("redis store is not connected: call connect() first")
        return self._gate

    def _map_error(self, operation: str, exc: Exception) -> MemoryStoreError:
        if isinstance(exc, self._timeouts):
            return StoreUnavailableError(f"redis {operation} timed out on {self.where}: {exc}")
        return StoreUnavailableError(f"redis {operation} failed on {self.where}: {type(exc).__name__}: {exc}")

    async def _run(self, script: lua.LuaScript, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run a script by its SHA, loading it on a server that does not know it yet."""
        argv = [self.key_prefix, self.ttl, *args]
        async with self._guard():
            client = self.client
            try:
                return await client.evalsha(script.sha, len(keys), *keys, *argv)
            except self._noscript:
                return await client.eval(script.source, len(keys), *keys, *argv)

    # ----- threads -------------------------------------------------------------------------

    async def _upsert_thread(self, thread_id: str, agent_id: str, metadata: dict[str, Any], now: datetime) -> Thread:
        keys = [self._thread_key(thread_id), self._threads_key()]
        reply = await self._run(lua.UPSERT_THREAD, keys, [thread_id, agent_id, to_micros(now), *_meta_args(metadata)])
        return _thread_from_flat(reply[1:])

    async def _get_thread(self, thread_id: str) -> Thread | None:
        async with self._guard():
            fields = await self.client.hgetall(self._thread_key(thread_id))
        return _thread(fields) if fields else None

    async def _update_thread(
        self, thread_id: str, metadata: dict[str, Any], replace: bool, now: datetime
    ) -> Thread | None:
        keys = [self._thread_key(thread_id), self._threads_key()]
        args = [thread_id, to_micros(now), "1" if replace else "0", *_meta_args(metadata)]
        reply = await self._run(lua.UPDATE_THREAD, keys, args)
        return None if reply[0] == "missing" else _thread_from_flat(reply[1:])

    async def _delete_thread(self, thread_id: str) -> bool:
        reply = await self._run(lua.DELETE_THREAD, [self._thread_key(thread_id), self._threads_key()], [thread_id])
        return bool(reply[0] == "ok")

    async def _scan_threads(
        self,
        *,
        agent_id: str | None,
        updated_after: datetime | None,
        updated_before: datetime | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Thread]:
        hi = "+inf" if updated_before is None else f"({to_micros(updated_before)}"
        if after is not None and (updated_before is None or after[0] < to_micros(updated_before)):
            hi = str(after[0])
        lo = "-inf" if updated_after is None else f"({to_micros(updated_after)}"
        key = self._threads_key() if agent_id is None else self._agent_key(agent_id)
        cursor = [str(after[0]), after[1]] if after is not None else ["", ""]
        reply = await self._run(lua.SCAN_THREADS, [key], [hi, lo, *cursor, limit])
        threads: list[Thread] = []
        i = 1
        while i < len(reply):
            size = int(reply[i])
            threads.append(_thread_from_flat(reply[i + 1 : i + 1 + size]))
            i += 1 + size
        return threads

    async def threads_of_user(self, user_id: str) -> MemoryResult[list[Thread]]:
        """Every thread whose metadata ``user_id`` is the user or whose ``memory_user_ids`` lists
        them (what a user's erasure deletes), read from the user's set (``user:<id>``), which
        every write of a thread's metadata keeps in the same script, instead of every thread.

        Threads written before the sets existed (by an older version) are added once: while the
        key ``users:indexed`` is missing, the first call walks the threads index (``ZSCAN``) and
        adds each thread to its users' sets, then sets that key. The walk is idempotent, so two
        first calls at once both run it harmlessly; delete the key to run it again (after an
        older writer was still running, say)."""
        try:
            self._require_connected()
            user = tree.check_id("user_id", user_id)
            await self._index_users_once()
            reply = await self._run(lua.THREADS_OF_USER, [self._user_key(user)], [user])
            threads: list[Thread] = []
            i = 1
            while i < len(reply):
                size = int(reply[i])
                threads.append(_thread_from_flat(reply[i + 1 : i + 1 + size]))
                i += 1 + size
            threads.sort(key=lambda t: t.id)
            return ok(threads)
        except Exception as exc:
            return self._fail("threads_of_user", exc)

    async def _index_users_once(self) -> None:
        """Add every thread written before the users' sets existed to them, unless done before."""
        marker = self._users_indexed_key()
        async with self._guard():
            if await self.client.exists(marker):
                return
        cursor = 0
        while True:
            async with self._guard():
                cursor, found = await self.client.zscan(self._threads_key(), cursor, count=_BACKFILL_BATCH)
            ids = [member for member, _ in found]
            for start in range(0, len(ids), _BACKFILL_BATCH):
                await self._run(lua.INDEX_USERS, [self._threads_key()], ids[start : start + _BACKFILL_BATCH])
            if cursor == 0:
                break
        async with self._guard():
            await self.client.set(marker, "1")

    # ----- entries -------------------------------------------------------------------------

    async def _add_entry(
        self, entry: NewMemoryEntry, entry_id: str, token_count: int | None, now: datetime
    ) -> MemoryEntry:
        token_count = tree.counted(entry, token_count)
        # The entry is built and encoded before the script runs: once it has run, the write is
        # committed, so nothing after it may fail (the reply is a status, a seq and a parent id).
        created = build_entry(entry, entry_id, None, 0, token_count, now)
        body = _body(created)
        tid = entry.thread_id
        where = "1" if entry.parent_id is not None else "r" if entry.root else "0"
        args = [
            tid,
            entry_id,
            entry.parent_id or "",
            where,
            "1" if entry.activate else "0",
            entry.type,
            to_micros(now),
            body,
        ]
        reply = await self._run(lua.ADD_ENTRY, [self._thread_key(tid), self._index_key(tid)], args)
        status = reply[0]
        if status == "missing":
            raise NotFoundError(f"thread not found: {tid}")
        if status == "noparent":
            raise NotFoundError(f"parent entry not found: {entry.parent_id}")
        if status == "otherparent":
            raise ConflictError(f"parent {entry.parent_id} is an entry of another thread, not of {tid}")
        if status != "ok":
            raise ConflictError(f"entry id {entry_id} is taken")
        return created.model_copy(update={"seq": int(reply[1]), "parent_id": reply[2] or None})

    async def _get_entries(
        self,
        thread_id: str,
        *,
        limit: int,
        before: datetime | None,
        after: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        args = [
            limit,
            "" if before is None else to_micros(before),
            "" if after is None else to_micros(after),
            *_types_args(types),
        ]
        reply = await self._run(lua.GET_ENTRIES, [self._thread_key(thread_id), self._index_key(thread_id)], args)
        return None if reply[0] == "missing" else _entries(reply)

    async def _get_entry(self, entry_id: str) -> MemoryEntry | None:
        async with self._guard():
            parent, seq, body = await self.client.hmget(self._entry_key(entry_id), ["p", "s", "b"])
        return None if body is None else _entry(parent, seq, body)

    async def _delete_entry(self, entry_id: str) -> MemoryEntry | None:
        reply = await self._run(lua.DELETE_ENTRY, [self._entry_key(entry_id)], [entry_id])
        if reply[0] != "ok":
            return None
        return _entry(reply[2], reply[3], reply[4])

    async def _clear_thread(self, thread_id: str) -> bool:
        reply = await self._run(
            lua.CLEAR_THREAD, [self._thread_key(thread_id), self._index_key(thread_id)], [thread_id]
        )
        return bool(reply[0] == "ok")

    # ----- trees ---------------------------------------------------------------------------

    async def _get_path(
        self,
        thread_id: str,
        leaf_id: str | None,
        *,
        limit: int,
        before: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        args = [thread_id, leaf_id or "", limit, "" if before is None else to_micros(before), *_types_args(types)]
        reply = await self._run(lua.GET_PATH, [self._thread_key(thread_id), self._index_key(thread_id)], args)
        if reply[0] == "missing":
            return None
        if reply[0] == "noleaf":
            raise NotFoundError(f"entry {leaf_id} is not an entry of thread {thread_id}")
        entries = _entries(reply)
        entries.reverse()
        return entries

    async def _set_active_leaf(self, thread_id: str, entry_id: str, *, on_active_path: bool, now: datetime) -> Thread:
        keys = [self._thread_key(thread_id), self._index_key(thread_id)]
        reply = await self._run(lua.SET_ACTIVE_LEAF, keys, [thread_id, entry_id, "1" if on_active_path else "0"])
        status = reply[0]
        if status == "missing":
            raise NotFoundError(f"thread not found: {thread_id}")
        if status == "noentry":
            raise NotFoundError(f"entry {entry_id} is not an entry of thread {thread_id}")
        if status == "offpath":
            raise ConflictError(f"entry {entry_id} is not on the active branch of {thread_id}: use checkout()")
        return _thread_from_flat(reply[1:])

    async def _replace_entry(self, entry: MemoryEntry) -> None:
        reply = await self._run(lua.REPLACE_ENTRY, [self._entry_key(entry.id)], [_body(entry)])
        if reply[0] != "ok":
            raise NotFoundError(f"entry not found: {entry.id}")

    async def _write_fork(self, origin_id: str, fork: Thread, entries: list[MemoryEntry], now: datetime) -> Thread:
        keys = [self._thread_key(origin_id), self._thread_key(fork.id), self._index_key(fork.id), self._threads_key()]
        children = {entry.parent_id: entry.id for entry in entries if entry.parent_id is not None}
        entry_args: list[Any] = []
        for entry in entries:
            entry_args += [
                entry.id,
                entry.parent_id or "",
                entry.type,
                to_micros(entry.created_at),
                entry.seq,
                children.get(entry.id, ""),
                _body(entry),
            ]
        meta = _meta_args(fork.metadata)
        forked_from = json.dumps(fork.metadata[FORKED_FROM_KEY], separators=(",", ":"))
        stamp = to_micros(now)
        field = "m:" + FORKS_KEY
        for _ in range(_FORK_RETRIES):
            async with self._guard():
                seen = await self.client.hget(keys[0], field)
            forks = json.loads(seen) if seen is not None else None
            forks = list(forks) if isinstance(forks, list) else []
            if fork.id not in forks:
                forks.append(fork.id)
            args = [
                origin_id,
                fork.id,
                fork.agent_id,
                stamp,
                fork.active_leaf_id or "",
                "0" if seen is None else "1",
                seen or "",
                json.dumps(forks, separators=(",", ":")),
                forked_from,
                len(meta) // 2,
                *meta,
                *entry_args,
            ]
            reply = await self._run(lua.WRITE_FORK, keys, args)
            status = reply[0]
            if status == "retry":
                continue
            if status == "missing":
                raise NotFoundError(f"thread not found: {origin_id}")
            if status == "taken":
                raise ConflictError(f"thread {fork.id} already exists")
            return _thread_from_flat(reply[1:])
        raise StoreUnavailableError(f"redis fork_thread: {origin_id}'s forks kept changing; try again")

    # ----- housekeeping --------------------------------------------------------------------

    async def delete_all_keys(self) -> int:
        """Delete every key under this adapter's prefix (all its threads); the number deleted.

        Meant for tests and tear-downs: it scans the keyspace, so do not call it on a hot path.
        """
        self._require_connected()
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", self.key_prefix) + "*"
        deleted = 0
        async with self._guard():
            batch: list[str] = []
            async for key in self.client.scan_iter(match=pattern, count=1000):
                batch.append(key)
                if len(batch) >= 500:
                    deleted += await self._delete_keys(batch)
                    batch = []
            if batch:
                deleted += await self._delete_keys(batch)
        return deleted

    async def _delete_keys(self, keys: list[str]) -> int:
        # On a cluster every key of the adapter carries the prefix's hash tag: one slot.
        return int(await self.client.delete(*keys))


__all__ = ["DEFAULT_KEY_PREFIX", "RedisAdapter", "cluster_prefix", "parse_node"]
