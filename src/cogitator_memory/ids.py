"""Short, URL-safe, unique ids with a prefix, sortable by creation time.

An id is the prefix, 12 hex digits of milliseconds since the epoch and 16 hex digits (64 bits)
of randomness, for example ``entry_019ad1f3c2a87c1e9b0d44f2a6e3``. Ids sort by the millisecond
they were made in; ids of one millisecond are unordered among themselves. The randomness comes
from :mod:`random`, which Python reseeds in a forked child, so processes never share a sequence.
"""

from __future__ import annotations

import random
import time

PREFIXES = ("thread_", "entry_", "emb_", "mem_", "fact_", "node_", "edge_", "file_")

_bits = random.getrandbits
_now_ns = time.time_ns


def new_id(prefix: str) -> str:
    """A new id: ``prefix`` + time (ms) + 64 random bits, in hex. ``prefix`` should end with ``_``."""
    # The milliseconds above the 64 random bits, written as one number: the same 12 + 16 hex
    # digits as writing them one after the other, for one conversion instead of two.
    return f"{prefix}{_now_ns() // 1_000_000 << 64 | _bits(64):028x}"


def thread_id() -> str:
    """A new thread id."""
    return new_id("thread_")


def entry_id() -> str:
    """A new entry id."""
    return new_id("entry_")


__all__ = ["PREFIXES", "entry_id", "new_id", "thread_id"]
