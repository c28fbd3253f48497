"""Service URLs for tests of real engines, read from ``COGMEM_TEST_*`` environment variables."""

from __future__ import annotations

import os


def service_url(variable: str) -> str:
    """The URL in ``variable``; otherwise skip the test, or fail it when ``CI=true``.

    ``scripts/services.sh start`` prints the variables for the engines it starts; point them
    at servers of your own to run the suites there.
    """
    import pytest

    value = os.environ.get(variable)
    if value:
        return value
    message = f'{variable} is not set: start the services with eval "$(bash scripts/services.sh start)"'
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


__all__ = ["service_url"]
