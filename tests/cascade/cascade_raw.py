"""Reading every byte a store holds, past its own calls, for the forgetting scans."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel


def strings_of(value: Any, seen: set[int] | None = None) -> Iterator[str]:
    """Every string reachable from ``value`` (objects' attributes, containers, pydantic models)."""
    seen = set() if seen is None else seen
    if isinstance(value, str):
        yield value
        return
    if isinstance(value, bytes | bytearray):
        yield bytes(value).decode("utf-8", "replace")
        return
    if value is None or isinstance(value, int | float | bool) or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, BaseModel):
        yield json.dumps(value.model_dump(mode="json"))
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from strings_of(key, seen)
            yield from strings_of(inner, seen)
        return
    if isinstance(value, list | tuple | set | frozenset):
        for inner in value:
            yield from strings_of(inner, seen)
        return
    if type(value).__module__.startswith(("asyncio", "threading", "_thread", "weakref", "numpy")):
        return
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        yield from strings_of(fields, seen)
    for slot in getattr(type(value), "__slots__", ()):
        if hasattr(value, slot):
            yield from strings_of(getattr(value, slot), seen)


def process_bytes(*objects: Any) -> bytes:
    """The text an in-process store keeps (every string reachable from it), as UTF-8."""
    return "\n".join(s for obj in objects for s in strings_of(obj)).encode("utf-8", "replace")
