"""Short, URL-safe, unique ids with a prefix, sortable by creation time.

An id is the prefix, 12 hex digits of milliseconds since the epoch and 16 hex digits (64 bits)
of randomness, for example ``entry_019ad1f3c2a87c1e9b0d44f2a6e3``. Ids sort by the millisecond
they were made in; ids of one millisecond are unordered among themselves. The randomness comes
from :mod:`random`, drawn for a few hundred ids at a time (one draw and one conversion to hex
instead of one per id); Python reseeds :mod:`random` in a forked child, and the child forgets
the bits its parent drew, so processes never share a sequence.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator

PREFIXES = ("thread_", "entry_", "emb_", "mem_", "fact_", "node_", "edge_", "file_")

_bits = random.getrandbits
_now_ns = time.time_ns

#: How many ids' random digits are drawn at once.
_DRAWN = 256
_DIGITS = 16
# The random digits of the next ids (16 hex digits each); empty until the first id.
_tails: Iterator[str] = iter(())


def _draw() -> str:
    """The random digits of one id, drawing those of the next :data:`_DRAWN` ids (the ones
    drawn before are used up)."""
    global _tails
    digits = f"{_bits(64 * _DRAWN):0{_DIGITS * _DRAWN}x}"
    tails = iter([digits[at : at + _DIGITS] for at in range(0, _DIGITS * _DRAWN, _DIGITS)])
    _tails = tails
    return next(tails)


def _forget_drawn() -> None:
    """Drop the digits drawn (in a forked child, which must not reuse its parent's)."""
    global _tails
    _tails = iter(())


if hasattr(os, "register_at_fork"):  # not on Windows, where there is no fork
    os.register_at_fork(after_in_child=_forget_drawn)


def new_id(prefix: str) -> str:
    """A new id: ``prefix`` + time (ms) + 64 random bits, in hex. ``prefix`` should end with ``_``."""
    try:
        tail = next(_tails)
    except StopIteration:
        tail = _draw()
    return f"{prefix}{_now_ns() // 1_000_000:012x}{tail}"


def thread_id() -> str:
    """A new thread id."""
    return new_id("thread_")


# The prefix and time digits of the last entry id, and their millisecond (ids made in the same
# millisecond, as most of a burst of writes are, reuse the digits instead of formatting them).
_entry_ms = -1
_entry_head = ""


def entry_id() -> str:
    """A new entry id (:func:`new_id` written out for ``entry_``: one is made for every entry)."""
    global _entry_ms, _entry_head
    try:
        tail = next(_tails)
    except StopIteration:
        tail = _draw()
    ms = _now_ns() // 1_000_000
    if ms != _entry_ms:
        _entry_head = f"entry_{ms:012x}"
        _entry_ms = ms
    return _entry_head + tail


__all__ = ["PREFIXES", "entry_id", "new_id", "thread_id"]
