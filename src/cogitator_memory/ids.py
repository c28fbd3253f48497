"""Short, URL-safe, unique ids with a prefix, sortable by creation time.

An id is the prefix, 10 characters of milliseconds since the epoch and 12 random characters,
both in Crockford base32 (lower case), for example ``entry_01jd5x3k2mabc7tq9w1x4e``.
"""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

PREFIXES = ("thread_", "entry_", "emb_", "mem_", "fact_", "node_", "edge_", "file_")


def _b32(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """A new id: ``prefix`` + time (ms) + randomness. ``prefix`` should end with ``_``."""
    ms = time.time_ns() // 1_000_000
    rnd = int.from_bytes(os.urandom(8), "big") >> 4  # 60 bits -> 12 chars
    return f"{prefix}{_b32(ms, 10)}{_b32(rnd, 12)}"


def thread_id() -> str:
    """A new thread id."""
    return new_id("thread_")


def entry_id() -> str:
    """A new entry id."""
    return new_id("entry_")


__all__ = ["PREFIXES", "entry_id", "new_id", "thread_id"]
