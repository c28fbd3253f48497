"""``cogitator-memory reindex``: write the recall index again from every thread of the store.

It runs :meth:`RecallIndexer.catch_up(full=True) <cogitator_memory.index.indexer.RecallIndexer.catch_up>`
on the store every command works on (:mod:`.where`), any engine that keeps a recall index. Each thread's records are written again from its turns, a
page of threads at a time, the oldest update first; the indexer keeps its place in the index
after each page (:data:`~cogitator_memory.index.indexer.REINDEX_KEY`), so a run stopped by Ctrl-C
or a kill goes on from the page it stopped in when run again (``--restart`` starts from the first thread).
Once the threads, items, graph and files are written, it walks every record of the index and
removes those whose source is gone (deleted by a writer that kept no index, or undone by a
restored backup), a page at a time, resumable the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict
from typing import Any

from ..errors import MemoryStoreError
from ..index.base import is_recall_index
from ..index.indexer import PRUNE_KEY, REINDEX_KEY, CatchUpReport, RecallIndexer, parse_mark, threads_oldest_first
from .formats import CliError
from .memory_commands import config_flag, memory_config, open_config_store
from .progress import Progress, progress_flag, progress_of
from .store import PROG, need
from .where import store_label


async def _count_threads(store: Any, mark: str | None, progress: Progress) -> int | None:
    """How many threads a run going on from ``mark`` (where an earlier one stopped) will read,
    for the progress line (their rows only); ``None`` when the store cannot list them."""
    progress.start("counting threads", unit="threads")
    try:
        left = await threads_oldest_first(store, None, parse_mark(mark))
    except MemoryStoreError:
        return None
    progress.update(len(left))
    return len(left)


async def reindex(store: Any, label: str, progress: Progress, *, restart: bool = False) -> tuple[CatchUpReport, bool]:
    """Index every thread of ``store`` again (see the module docs); the report and whether the
    run went on from where an earlier one stopped. Ctrl-C is a :class:`CliError` (status 130)
    saying how far it got."""
    if not is_recall_index(store):
        raise CliError(f"{label} keeps no recall index ({type(store).__name__}): there is nothing to reindex")
    indexer = RecallIndexer(store)
    if restart:
        need(await store.set_recall_state(PRUNE_KEY, ""))
        need(await store.set_recall_state(REINDEX_KEY, ""))
    cursor = need(await store.get_recall_state(REINDEX_KEY))
    past_threads = bool(need(await store.get_recall_state(PRUNE_KEY)))
    resumed = parse_mark(cursor) is not None or past_threads  # a mark of an earlier version starts over
    if past_threads:  # stopped after its threads: it goes on with the rest
        total: int | None = 0
    else:
        total = await _count_threads(store, cursor, progress) if progress.enabled else None
    done = CatchUpReport()
    label = " (resumed)" if resumed else ""

    def shown(report: CatchUpReport) -> None:
        if report.records_checked and not done.records_checked:
            progress.start(f"removing the records of sources gone{label}", unit="records checked")
        for key, value in asdict(report).items():
            setattr(done, key, value)
        progress.update(report.records_checked or report.threads_checked)

    progress.start(f"reindexing{label}", total, unit="threads")
    try:
        report = await indexer.catch_up(full=True, progress=shown)
    except (KeyboardInterrupt, asyncio.CancelledError):
        removed = f", {done.records_removed:,} removed" if done.records_checked else ""
        raise CliError(
            f"interrupted after {done.threads_checked:,} threads ({done.records_written:,} records{removed}): "
            f"run '{PROG} reindex' again to go on from where it stopped",
            code=130,
        ) from None
    progress.end()
    return report, resumed


async def cmd_reindex(args: argparse.Namespace) -> int:
    """``reindex``: the recall index written again from the store's threads, resumable."""
    config = memory_config(args)
    label = store_label(args, config)
    async with open_config_store(config) as store:
        report, resumed = await reindex(store, label, progress_of(args), restart=args.restart)
    if args.json:
        print(json.dumps({**asdict(report), "resumed": resumed}, indent=2))
        return 0
    how = " (went on from where an earlier run stopped)" if resumed else ""
    print(
        f"Reindexed {report.threads_checked:,} thread{'' if report.threads_checked == 1 else 's'} of {label}{how}: "
        f"{report.records_written:,} record{'' if report.records_written == 1 else 's'} written, "
        f"{report.records_removed:,} removed (their source was gone)."
    )
    return 0


def register(sub: Any, db: argparse.ArgumentParser) -> None:
    """Add ``reindex`` to the subcommands ``sub`` (``db``: the parent parser holding ``--db``)."""
    command = sub.add_parser(
        "reindex", parents=[db], help="write the recall index again from every thread (resumable after Ctrl-C)"
    )
    config_flag(command)
    command.add_argument(
        "--restart", action="store_true", help="start from the first thread, not where a stopped run left off"
    )
    command.add_argument(
        "--json",
        action="store_true",
        help="print JSON: {threads_checked, threads_indexed, records_written, records_checked, records_removed, resumed}",
    )
    progress_flag(command)
    command.set_defaults(handler=cmd_reindex)


__all__ = ["cmd_reindex", "register", "reindex"]
