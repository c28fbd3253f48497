"""What every conformance suite is made of: named cases, the list that collects them, two checks.

A suite module (threads, items, facts, memory files...) subclasses :class:`NamedCase` for its
public case class, makes one :class:`CaseList` of it, registers each ``case_*`` coroutine with
:meth:`CaseList.case` (the name is the function's without ``case_``) and hands out
:meth:`CaseList.cases`::

    class ItemConformanceCase(NamedCase[Any]):
        \"\"\"One named check of the memory item store contract.\"\"\"

    _CASES = CaseList(ItemConformanceCase)
    _case = _CASES.case

    @_case
    async def case_add_and_get(store: Any) -> None: ...

:func:`expect_equal`, :func:`expect` and :func:`expect_failed` raise ``AssertionError`` saying
what differed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..result import MemoryResult

StoreT = TypeVar("StoreT")
CaseT = TypeVar("CaseT", bound="NamedCase[Any]")
RunT = TypeVar("RunT", bound=Callable[..., Awaitable[None]])


@dataclass(frozen=True)
class NamedCase(Generic[StoreT]):
    """One named check of a store contract: ``await case.run(store)`` raises ``AssertionError``
    when the store breaks it. ``str(case)`` is its name (handy as a pytest id)."""

    name: str
    run: Callable[[StoreT], Awaitable[None]]

    def __str__(self) -> str:
        return self.name


class CaseList(Generic[CaseT]):
    """The cases of one suite in the order they were registered; ``make(name, run, **fields)``
    builds each (the case class, whose own fields, if any, come as keywords)."""

    def __init__(self, make: Callable[..., CaseT]) -> None:
        self._make = make
        self._cases: list[CaseT] = []

    def case(self, fn: RunT, **fields: Any) -> RunT:
        """Register ``fn`` (a decorator) as the case named ``fn.__name__`` without ``case_``;
        ``fields`` go to ``make`` (``functools.partial(cases.case, forgetting=True)`` as a
        decorator registers a case whose class has a ``forgetting`` field)."""
        self._cases.append(self._make(fn.__name__.removeprefix("case_"), fn, **fields))
        return fn

    def cases(self) -> list[CaseT]:
        """Every case registered, in a stable order (a new list each call)."""
        return list(self._cases)


def expect_equal(actual: Any, expected: Any, what: str) -> None:
    """``AssertionError`` naming ``what`` and both values unless ``actual == expected``."""
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


def expect(condition: bool, what: str) -> None:
    """``AssertionError`` saying ``what`` unless ``condition`` holds."""
    if not condition:
        raise AssertionError(what)


def expect_failed(
    result: MemoryResult[Any], what: str, error_type: type[Exception] | None = None, mentions: str = ""
) -> str:
    """Check that ``result`` failed, with a message, as ``error_type`` (or a subclass) when given,
    its message naming ``mentions`` when given; the message."""
    if result.success:
        raise AssertionError(f"{what}: expected a failed result, got success with {result.data!r}")
    message = result.error or ""
    expect(bool(message), f"{what}: a failed result must carry a message")
    if error_type is not None:
        expect(
            result.error_type is not None and issubclass(result.error_type, error_type),
            f"{what}: expected a {error_type.__name__}, got {result.error_type} ({message})",
        )
    if mentions:
        expect(mentions in message, f"{what}: the error should name {mentions!r}: {message}")
    return message


__all__ = ["CaseList", "NamedCase", "expect", "expect_equal", "expect_failed"]
