"""mem0's ``filters``: the scope ids they name and the conditions on the other fields.

mem0 2.x scopes ``search`` and ``get_all`` by ``filters={"user_id": ..., "agent_id": ...,
"run_id": ...}`` and narrows by conditions on a memory's fields and metadata: ``{"key":
value}`` (equal), ``{"key": {"<op>": value}}`` with the operators of :data:`OPERATORS`,
``{"key": "*"}`` (the key is set), and ``AND`` / ``OR`` / ``NOT`` over lists of such filters.
:func:`compile_filters` checks a filter whole before anything is read (an unknown operator
raises :class:`~cogitator_memory.errors.InvalidArgumentError` naming where it is) and returns
the scope ids and a predicate over the memories in mem0's shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgumentError
from ..threads import tree

#: The scope ids a filter may name at its top level.
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
#: mem0's comparison operators.
OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains")
#: mem0's logical operators.
LOGICAL = ("AND", "OR", "NOT")
#: Fields of a memory a condition reads at the top level of its dict (the rest: its metadata).
TOP_LEVEL = frozenset({"id", "memory", "hash", "created_at", "updated_at", "role", "actor_id", *SCOPE_KEYS})

Predicate = Callable[[Mapping[str, Any]], bool]
_MISSING = object()


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    """A checked mem0 filter: the scope ids it names (``None`` when not named) and the
    predicate the other conditions make (``None`` when there are none)."""

    user_id: str | None
    agent_id: str | None
    run_id: str | None
    predicate: Predicate | None

    def matches(self, memory: Mapping[str, Any]) -> bool:
        """Whether a memory (mem0's dict) passes the conditions."""
        return self.predicate is None or self.predicate(memory)


def _field(memory: Mapping[str, Any], key: str) -> Any:
    value = memory.get(key) if key in TOP_LEVEL else (memory.get("metadata") or {}).get(key)
    return _MISSING if value is None else value


def _compare(op: str, have: Any, want: Any) -> bool:
    if have is _MISSING:
        return op in ("ne", "nin")
    try:
        if op == "eq":
            return bool(have == want)
        if op == "ne":
            return bool(have != want)
        if op == "gt":
            return bool(have > want)
        if op == "gte":
            return bool(have >= want)
        if op == "lt":
            return bool(have < want)
        if op == "lte":
            return bool(have <= want)
        if op == "in":
            return have in want
        if op == "nin":
            return have not in want
        if op == "contains":
            return isinstance(have, str | list) and want in have
        return isinstance(have, str) and str(want).casefold() in have.casefold()  # icontains
    except TypeError:  # a number compared with text: no match, as a typed store answers
        return False


def _condition(where: str, key: str, value: Any) -> Predicate:
    if value == "*":
        return lambda memory: _field(memory, key) is not _MISSING
    if not isinstance(value, Mapping):
        return lambda memory: _compare("eq", _field(memory, key), value)
    if not value:
        raise InvalidArgumentError(where, "an operator dict must name at least one operator")
    checks: list[tuple[str, Any]] = []
    for op, operand in value.items():
        if op not in OPERATORS:
            raise InvalidArgumentError(f"{where}.{op}", f"unknown operator; mem0's are {', '.join(OPERATORS)}")
        if op in ("in", "nin") and (isinstance(operand, str | bytes) or not isinstance(operand, list | tuple | set)):
            raise InvalidArgumentError(f"{where}.{op}", "must be a list of values")
        if op in ("contains", "icontains") and not isinstance(operand, str):
            raise InvalidArgumentError(f"{where}.{op}", "must be text")
        checks.append((op, operand))
    return lambda memory: all(_compare(op, _field(memory, key), operand) for op, operand in checks)


def _logical(op: str, subs: list[Predicate]) -> Predicate:
    def check(memory: Mapping[str, Any]) -> bool:
        if op == "AND":
            return all(sub(memory) for sub in subs)
        if op == "OR":
            return any(sub(memory) for sub in subs)
        return not any(sub(memory) for sub in subs)  # NOT

    return check


def _compile(where: str, filters: Mapping[str, Any]) -> Predicate:
    """The predicate of every condition of ``filters`` (scope ids included, as conditions)."""
    parts: list[Predicate] = []
    for key, value in filters.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(where, f"keys must be text, got {key!r}")
        here = f"{where}.{key}"
        if key in LOGICAL:
            if isinstance(value, str | bytes) or not isinstance(value, list | tuple) or not value:
                raise InvalidArgumentError(here, "must be a non-empty list of filters")
            subs: list[Predicate] = []
            for i, sub in enumerate(value):
                if not isinstance(sub, Mapping):
                    raise InvalidArgumentError(f"{here}[{i}]", "must be a filter dict")
                subs.append(_compile(f"{here}[{i}]", sub))
            parts.append(_logical(key, subs))
        else:
            parts.append(_condition(here, key, value))
    return lambda memory: all(p(memory) for p in parts)


def compile_filters(filters: object, **ids: str | None) -> CompiledFilter:
    """Check mem0 ``filters`` (a dict or ``None``) with the scope ids given as arguments
    (``user_id=``, ``agent_id=``, ``run_id=``, mem0 1.x's form); an id given both ways must be
    the same. Top-level scope ids must be plain ids (operators on them are conditions only
    inside ``AND`` / ``OR`` / ``NOT``)."""
    if filters is None:
        filters = {}
    if not isinstance(filters, Mapping):
        raise InvalidArgumentError("filters", f"must be a dict, got {type(filters).__name__}")
    scope: dict[str, str | None] = {}
    rest: dict[str, Any] = {}
    for key, value in filters.items():
        if key in SCOPE_KEYS:
            if isinstance(value, Mapping) or value == "*":
                raise InvalidArgumentError(
                    f"filters.{key}", "must be one id here (operators on ids go inside AND, OR or NOT)"
                )
            scope[key] = tree.check_id(f"filters.{key}", value)
        else:
            rest[key] = value
    for key, value in ids.items():
        if value is None:
            continue
        given = tree.check_id(key, value)
        if scope.get(key) not in (None, given):
            raise InvalidArgumentError(key, f"is {given!r} but filters.{key} is {scope[key]!r}")
        scope[key] = given
    predicate = _compile("filters", rest) if rest else None
    return CompiledFilter(
        user_id=scope.get("user_id"), agent_id=scope.get("agent_id"), run_id=scope.get("run_id"), predicate=predicate
    )


__all__ = ["LOGICAL", "OPERATORS", "SCOPE_KEYS", "CompiledFilter", "compile_filters"]
