"""Shared test plumbing: service URLs from the environment, and no silent skips in CI.

Store tests read their server from ``COGMEM_TEST_*`` variables (``scripts/services.sh`` prints
them). Without one a test is skipped locally; with ``CI=true`` it fails, so a missing service
can never pass as green.
"""

from __future__ import annotations

import gc
import os
import warnings

import pytest

from cogitator_memory.testing.services import service_url

__all__ = ["service_url"]


def pytest_sessionstart(session: pytest.Session) -> None:
    """qdrant-client's local mode (up to 1.20 at least) checks SQLite's threading once per process
    on a connection it never closes (``with sqlite3.connect(":memory:")`` commits, it does not
    close). From Python 3.13 the collected connection warns (``ResourceWarning``), and warnings
    are errors here: the check is made now and its connection collected with that one warning
    silenced, so that a leak of our own still fails its test."""
    try:
        from qdrant_client.local.persistence import CollectionPersistence
    except ImportError:  # the qdrant extra is not installed
        return
    if getattr(CollectionPersistence, "CHECK_SAME_THREAD", True) is not None:
        return
    import tempfile

    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "unclosed database", ResourceWarning)
        CollectionPersistence(folder).close()
        gc.collect()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int) -> None:
    if os.environ.get("CI") == "true" and terminalreporter.stats.get("skipped"):
        terminalreporter.write_line("CI=true: skipped tests count as failures", red=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("CI") != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and reporter.stats.get("skipped") and session.exitstatus == 0:
        session.exitstatus = 1
