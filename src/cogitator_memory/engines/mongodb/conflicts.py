"""Write conflicts of MongoDB transactions: which failures are worth a retry, and how long to
wait before it. Used by the adapter's transactions and the file store's (:mod:`.files`)."""

from __future__ import annotations

import random


def is_write_conflict(exc: BaseException) -> bool:
    """Whether a transaction failed for a write conflict (worth a retry), not a lost server."""
    from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError

    if not isinstance(exc, PyMongoError) or isinstance(exc, ConnectionFailure):
        return False
    if isinstance(exc, OperationFailure) and exc.code == 112:
        return True
    return exc.has_error_label("TransientTransactionError") or "write conflict" in str(exc).lower()


def retry_pause(attempt: int) -> float:
    """Seconds to wait before the ``attempt``-th retry of a transaction after a write conflict:
    random, up to 1 ms doubled per attempt, at most 50 ms (the exponent capped, so that a server
    busy for thousands of retries never makes it overflow)."""
    return random.uniform(0, min(0.05, 0.001 * 2 ** min(attempt, 6)))


__all__ = ["is_write_conflict", "retry_pause"]
