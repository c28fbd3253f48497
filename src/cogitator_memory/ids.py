"""Short, URL-safe, unique ids with a prefix, sortable by creation time.

An id is the prefix, 10 characters of milliseconds since the epoch and 13 random characters
(64 bits), both in Crockford's base32 alphabet, lower case, for example
``entry_01jd5x3k2m8d3fqk2v7w9x1yz``. Ids made in one millisecond are unordered among themselves.
"""

from __future__ import annotations

import base64
import os
import time

_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789abcdefghjkmnpqrstvwxyz")

PREFIXES = ("thread_", "entry_", "emb_", "mem_", "fact_", "node_", "edge_", "file_")


def new_id(prefix: str) -> str:
    """A new id: ``prefix`` + time (ms) + 64 random bits. ``prefix`` should end with ``_``."""
    ms = time.time_ns() // 1_000_000
    raw = (ms << 2).to_bytes(7, "big")[1:] + os.urandom(8)  # 48-bit time shifted to fill 10 characters
    encoded = base64.b32encode(raw).translate(_TO_CROCKFORD)
    return prefix + encoded[:23].decode()


def thread_id() -> str:
    """A new thread id."""
    return new_id("thread_")


def entry_id() -> str:
    """A new entry id."""
    return new_id("entry_")


__all__ = ["PREFIXES", "entry_id", "new_id", "thread_id"]
