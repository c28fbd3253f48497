"""testing/cases.py: the named cases and case lists every conformance suite is built from."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest

from cogitator_memory.testing import (
    ConformanceCase,
    FactConformanceCase,
    FileConformanceCase,
    ItemConformanceCase,
    fact_adapter_conformance_cases,
    memory_adapter_conformance_cases,
    memory_file_adapter_conformance_cases,
    memory_item_adapter_conformance_cases,
)
from cogitator_memory.testing.cases import CaseList, NamedCase, expect, expect_equal


class _Case(NamedCase[list[str]]):
    """A case over a list, for this test."""


async def test_a_case_list_registers_cases_by_name_in_order_and_hands_out_copies() -> None:
    cases = CaseList(_Case)

    @cases.case
    async def case_appends(store: list[str]) -> None:
        store.append("first")

    @cases.case
    async def second(store: list[str]) -> None:
        store.append("second")

    listed = cases.cases()
    assert [str(c) for c in listed] == ["appends", "second"]
    assert all(type(c) is _Case for c in listed)
    assert listed[0] == _Case("appends", case_appends)  # the decorator hands the function back
    store: list[str] = []
    for case in listed:
        await case.run(store)
    assert store == ["first", "second"]
    listed.clear()
    assert len(cases.cases()) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        listed_again = cases.cases()[0]
        listed_again.name = "renamed"  # type: ignore[misc]


def test_the_checks_say_what_differed() -> None:
    expect_equal([1], [1], "same")
    expect(True, "holds")
    with pytest.raises(AssertionError, match=r"^count: expected 2, got 3$"):
        expect_equal(3, 2, "count")
    with pytest.raises(AssertionError, match=r"^the store kept it$"):
        expect(False, "the store kept it")


@pytest.mark.parametrize(
    ("suite", "kind"),
    [
        (memory_adapter_conformance_cases, ConformanceCase),
        (memory_item_adapter_conformance_cases, ItemConformanceCase),
        (fact_adapter_conformance_cases, FactConformanceCase),
        (memory_file_adapter_conformance_cases, FileConformanceCase),
    ],
)
def test_every_suite_hands_out_its_own_named_cases(suite: Any, kind: type[NamedCase[Any]]) -> None:
    cases = suite()
    assert len(cases) >= 10
    assert all(type(c) is kind and isinstance(c, NamedCase) for c in cases)
    names = [str(c) for c in cases]
    assert len(set(names)) == len(names)
    assert all(n and not n.startswith("case_") for n in names)
    assert [c.name for c in suite()] == names


@dataclasses.dataclass(frozen=True)
class _FlaggedCase(NamedCase[list[str]]):
    """A case with a field of its own, for this test."""

    forgetting: bool = False


def test_a_case_class_with_fields_of_its_own_gets_them_as_keywords() -> None:
    cases = CaseList(_FlaggedCase)
    forgetting = functools.partial(cases.case, forgetting=True)

    @cases.case
    async def case_keeps(store: list[str]) -> None:
        store.append("kept")

    @forgetting
    async def case_forgets(store: list[str]) -> None:
        store.clear()

    assert [(c.name, c.forgetting) for c in cases.cases()] == [("keeps", False), ("forgets", True)]
    assert cases.cases()[1].run is case_forgets
