"""The cool-down after an embedding service fails: one rule for every reader of it.

A search or a context build that needs the input's vector asks the embedding service; when the
service fails (after its own retries), the callers that go on without vectors (search by
keywords, time and names; a build without ranking by meaning) do not ask it again for
:data:`EMBEDDING_COOLDOWN` seconds, so a dead service costs its timeouts once, not at every call.
The first call after the cool-down asks again; a success ends it at once. The time of the last
failure is kept per service object (weakly: a service that goes away takes it along).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from typing import Any

#: Seconds after a failure of the embedding service during which callers do not ask it again.
EMBEDDING_COOLDOWN = 30.0

_FAILED_AT: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def cooling(service: Any) -> float | None:
    """Seconds since ``service`` last failed, while within :data:`EMBEDDING_COOLDOWN`; else ``None``."""
    try:
        failed = _FAILED_AT.get(service)
    except TypeError:  # a service that cannot be weakly referenced is never skipped
        return None
    if failed is None:
        return None
    ago = time.monotonic() - failed
    if ago >= EMBEDDING_COOLDOWN:
        _FAILED_AT.pop(service, None)
        return None
    return ago


def mark_failed(service: Any) -> None:
    """``service`` failed now: the cool-down starts."""
    with contextlib.suppress(TypeError):  # a service that cannot be weakly referenced is never skipped
        _FAILED_AT[service] = time.monotonic()


def mark_working(service: Any) -> None:
    """``service`` answered: no cool-down."""
    with contextlib.suppress(TypeError):
        _FAILED_AT.pop(service, None)


__all__ = ["EMBEDDING_COOLDOWN", "cooling", "mark_failed", "mark_working"]
