"""Ids: the prefix, 12 hex digits of milliseconds and 16 of randomness, sortable by time."""

from __future__ import annotations

import re
import time

import pytest

from cogitator_memory import ids


@pytest.mark.parametrize("prefix", ids.PREFIXES)
def test_an_id_is_prefix_milliseconds_and_64_random_bits(prefix: str) -> None:
    before = time.time_ns() // 1_000_000
    made = ids.new_id(prefix)
    after = time.time_ns() // 1_000_000
    assert re.fullmatch(re.escape(prefix) + "[0-9a-f]{28}", made)
    stamp = int(made[len(prefix) : len(prefix) + 12], 16)
    assert before <= stamp <= after


def test_ids_sort_by_time_and_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    made = [ids.entry_id() for _ in range(2_000)]
    assert len(set(made)) == len(made)
    assert all(m.startswith("entry_") for m in made)
    assert ids.thread_id().startswith("thread_")
    # Random bits all ones do not carry into the milliseconds; a later millisecond sorts after.
    monkeypatch.setattr(ids, "_bits", lambda n: (1 << n) - 1)
    monkeypatch.setattr(ids, "_now_ns", lambda: 5_000_000)
    high = ids.new_id("x_")
    assert high == "x_" + "000000000005" + "f" * 16
    monkeypatch.setattr(ids, "_bits", lambda n: 0)
    monkeypatch.setattr(ids, "_now_ns", lambda: 6_000_000)
    assert ids.new_id("x_") == "x_" + "000000000006" + "0" * 16 > high
