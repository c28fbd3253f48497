"""Ids: the prefix, 12 hex digits of milliseconds and 16 of randomness, sortable by time."""

from __future__ import annotations

import os
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
    made = [ids.entry_id() for _ in range(2_000)]  # several draws of random digits
    assert len(set(made)) == len(made)
    assert all(re.fullmatch("entry_[0-9a-f]{28}", m) for m in made)
    assert ids.thread_id().startswith("thread_")
    # Random bits all ones do not carry into the milliseconds; a later millisecond sorts after.
    monkeypatch.setattr(ids, "_tails", iter(()))
    monkeypatch.setattr(ids, "_bits", lambda n: (1 << n) - 1)
    monkeypatch.setattr(ids, "_now_ns", lambda: 5_000_000)
    high = ids.new_id("x_")
    assert high == "x_" + "000000000005" + "f" * 16
    assert ids.entry_id() == "entry_" + "000000000005" + "f" * 16
    monkeypatch.setattr(ids, "_tails", iter(()))
    monkeypatch.setattr(ids, "_bits", lambda n: 0)
    monkeypatch.setattr(ids, "_now_ns", lambda: 6_000_000)
    assert ids.new_id("x_") == "x_" + "000000000006" + "0" * 16 > high
    # Entry ids reuse the digits of their millisecond, and take the next one's when it comes.
    assert ids.entry_id() == "entry_" + "000000000006" + "0" * 16
    monkeypatch.setattr(ids, "_now_ns", lambda: 6_999_999)
    assert ids.entry_id()[:18] == "entry_000000000006"
    monkeypatch.setattr(ids, "_now_ns", lambda: 7_000_000)
    assert ids.entry_id()[:18] == "entry_000000000007"


def test_each_id_takes_its_own_64_bits_of_a_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random digits are drawn for many ids at once and handed out in order, 64 bits each,
    every bit of the draw used once."""
    drawn = int("".join(f"{i:016x}" for i in range(ids._DRAWN)), 16)
    monkeypatch.setattr(ids, "_tails", iter(()))
    monkeypatch.setattr(ids, "_bits", lambda n: drawn if n == 64 * ids._DRAWN else pytest.fail(f"drew {n} bits"))
    tails = [ids.new_id("x_")[-16:] if i % 2 else ids.entry_id()[-16:] for i in range(ids._DRAWN)]
    assert tails == [f"{i:016x}" for i in range(ids._DRAWN)]
    monkeypatch.setattr(ids, "_bits", lambda n: 0)
    assert ids.entry_id()[-16:] == "0" * 16  # used up: drawn again


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_forked_child_makes_other_ids_than_its_parent() -> None:
    ids.entry_id()  # digits drawn, most of them not used yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, to the parent
        try:
            os.write(write, " ".join(ids.entry_id() for _ in range(20)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split()
    os.waitpid(pid, 0)
    parent = [ids.entry_id() for _ in range(20)]
    assert len(child) == 20
    assert {c[-16:] for c in child}.isdisjoint(p[-16:] for p in parent)
