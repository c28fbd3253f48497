"""Shared test plumbing: service URLs from the environment, and no silent skips in CI.

Store tests read their server from ``COGMEM_TEST_*`` variables (``scripts/services.sh`` prints
them). Without one a test is skipped locally; with ``CI=true`` it fails, so a missing service
can never pass as green.
"""

from __future__ import annotations

import os

import pytest

from cogitator_memory.testing.services import service_url

__all__ = ["service_url"]


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
