"""PostgreSQL: concurrent ``get_entry`` calls are answered by one statement (a search reads the
20-50 turns it returns at once), each call still gets exactly its own entry, and a caller that
gives up does not disturb the others. Against the real server."""

from __future__ import annotations

import asyncio

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter


async def test_concurrent_reads_share_one_statement(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema, pool_size=4) as memory:
        thread = unwrap(await memory.create_thread("agent"))
        entries = [
            unwrap(
                await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"turn {i}"}})
            )
            for i in range(30)
        ]
        wanted = [e.id for e in entries] + ["entry_missing", entries[3].id]
        before = memory.pool.get_stats().get("requests_num", 0)
        results = await asyncio.gather(*(memory.get_entry(i) for i in wanted))
        asked = memory.pool.get_stats().get("requests_num", 0) - before
        assert asked == 1, f"{len(wanted)} reads took {asked} connections"
        found = [unwrap(r) for r in results]
        assert [e.id if e else None for e in found] == [*[e.id for e in entries], None, entries[3].id]
        assert [e.message.text for e in found[:30] if e and e.message] == [f"turn {i}" for i in range(30)]
        # one read alone is answered as before
        alone = unwrap(await memory.get_entry(entries[7].id))
        assert alone is not None and alone.seq == entries[7].seq


async def test_a_caller_that_gives_up_leaves_the_others_their_entries(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:
        thread = unwrap(await memory.create_thread("agent"))
        ids = [
            unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": str(i)}})).id
            for i in range(5)
        ]
        tasks = [asyncio.ensure_future(memory.get_entry(i)) for i in ids]
        await asyncio.sleep(0)  # every read is waiting for the batch
        tasks[2].cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(done[2], asyncio.CancelledError)
        assert [unwrap(r).id for i, r in enumerate(done) if i != 2] == [ids[0], ids[1], ids[3], ids[4]]  # type: ignore[union-attr]
        assert unwrap(await memory.get_entry(ids[2])) is not None
