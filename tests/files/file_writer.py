"""A writer of memory files in a process of its own, for the tests that race writers in several
processes (test_file_writers.py). Run as ``python file_writer.py '<json>'``; prints one JSON line
with the answer or the refusal of each command.

The JSON names the store (``{"engine": "sqlite", "path": ...}`` or ``{"engine": "postgres",
"url": ..., "schema": ...}``), the access, the commands, a wall-clock time to start at and an
interval: command ``k`` starts at ``start_at + k * interval``, so the writers of the processes
meet on every command. ``pause`` (seconds) slows the writer down between reading what stands
and adding its versions, and between adding them and looking again, as a slow network would:
that is where writers of other processes get in.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from cogitator_memory import PostgresAdapter, SQLiteAdapter
from cogitator_memory.files import MemoryFileError, MemoryFiles


class SlowStore:
    """A store that takes ``pause`` seconds more to answer each read and each write."""

    def __init__(self, store: Any, pause: float) -> None:
        self.store, self.pause, self.provider = store, pause, store.provider

    async def _slow(self, result: Any) -> Any:
        await asyncio.sleep(self.pause)
        return result

    async def add_file_versions(self, versions: Any) -> Any:
        return await self._slow(await self.store.add_file_versions(versions))

    async def find_file_heads(self, flt: Any) -> Any:
        return await self._slow(await self.store.find_file_heads(flt))

    async def query_file_versions(self, flt: Any) -> Any:
        return await self.store.query_file_versions(flt)

    async def redact_file_versions(self, ids: Any, redaction: Any) -> Any:
        return await self.store.redact_file_versions(ids, redaction)


async def main(job: dict[str, Any]) -> list[dict[str, Any]]:
    if job["engine"] == "sqlite":
        store: Any = SQLiteAdapter(path=job["path"], busy_timeout=30.0)
    else:
        store = PostgresAdapter(url=job["url"], schema=job["schema"], pool_size=2, dimensions=8)
    done: list[dict[str, Any]] = []
    async with store:
        files = MemoryFiles(adapter=SlowStore(store, job.get("pause", 0.0)))
        for k, command in enumerate(job["commands"]):
            delay = job["start_at"] + k * job["interval"] - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                done.append({"ok": await files.run(job["access"], command)})
            except MemoryFileError as exc:
                done.append({"refused": str(exc)})
    return done


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
