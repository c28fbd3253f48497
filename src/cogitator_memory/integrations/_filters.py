"""LangGraph's filter and namespace rules, as plain functions (no I/O, no LangGraph import).

A search ``filter`` matches a value's fields exactly (nested dicts and lists compared element
by element) or by the operators ``$eq $ne $gt $gte $lt $lte`` (the ordering ones compare as
numbers, and a value that is no number does not match); a namespace condition matches a
prefix or a suffix of labels, ``"*"`` matching any one label. Both as LangGraph's
``InMemoryStore`` has them.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter rule: exact (nested) values, or ``$eq $ne $gt $gte $lt $lte``."""
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_compare(value, op, arg) for op, arg in wanted.items())
        return isinstance(value, dict) and all(matches(value.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(value, list | tuple)
            and len(value) == len(wanted)
            and all(matches(a, b) for a, b in zip(value, wanted, strict=True))
        )
    return bool(value == wanted)


_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def check_filter(name: str, wanted: Any) -> None:
    """Refuse an operator LangGraph's filters do not have, wherever it is in ``wanted``."""
    if isinstance(wanted, dict):
        for key, value in wanted.items():
            if isinstance(key, str) and key.startswith("$") and key not in _OPERATORS:
                raise InvalidArgumentError(name, f"unknown operator {key!r} (use $eq $ne $gt $gte $lt $lte)")
            check_filter(name, value)
    elif isinstance(wanted, list | tuple):
        for value in wanted:
            check_filter(name, value)


def _compare(value: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(value == arg)
    if op == "$ne":
        return bool(value != arg)
    try:
        left, right = float(value), float(arg)
    except (TypeError, ValueError):
        return False
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


def namespace_matches(condition: Any, namespace: tuple[str, ...]) -> bool:
    """Whether ``namespace`` matches a LangGraph ``MatchCondition`` (``match_type`` "prefix" or
    "suffix", ``path`` of labels where ``"*"`` matches any one)."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


__all__ = ["check_filter", "matches", "namespace_matches"]
