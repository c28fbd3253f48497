"""Lineage: check that what memory derived quotes what the conversation said.

A piece of :class:`~cogitator_memory.threads.records.Evidence` is ``verified`` when its quote is in the
text of the entry it names (whitespace aside: runs of whitespace compare equal, and the case
must match), else ``suggested``: a quote that is not found, an entry that is gone, evidence
without an ``entry_id``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from .result import MemoryResult, err, ok
from .threads.records import CheckedEvidence, EntryContent, Evidence, EvidenceStatus

_SPACE = re.compile(r"\s+")


def _squash(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def entry_text(entry: EntryContent) -> str:
    """Everything of an entry a quote may come from: message text, tool-call arguments and
    results, and the text of its event."""
    parts: list[str] = []
    if entry.message is not None:
        parts.append(entry.message.text)
        for call in entry.message.tool_calls or ():
            parts.append(str(call.arguments))
    for call in entry.tool_calls or ():
        parts.append(str(call.arguments))
    for result in entry.tool_results or ():
        parts.append(result.result if isinstance(result.result, str) else str(result.result))
    if entry.event is not None:
        parts.extend(str(v) for v in entry.event.model_dump().values() if isinstance(v, str))
    return "\n".join(parts)


def _as_evidence(evidence: Evidence | dict[str, Any]) -> Evidence:
    return evidence if isinstance(evidence, Evidence) else Evidence.model_validate(evidence)


def verify_evidence(evidence: Evidence | dict[str, Any], entry: EntryContent | None) -> EvidenceStatus:
    """``'verified'`` when the quote is in ``entry``, whitespace aside; else ``'suggested'``."""
    item = _as_evidence(evidence)
    if entry is None or not item.entry_id:
        return "suggested"
    if getattr(entry, "id", item.entry_id) != item.entry_id:
        return "suggested"
    quote = _squash(item.quote)
    if not quote:
        return "suggested"
    return "verified" if quote in _squash(entry_text(entry)) else "suggested"


async def verify_evidence_in_memory(
    memory: Any, evidence: Sequence[Evidence | dict[str, Any]]
) -> MemoryResult[list[CheckedEvidence]]:
    """Check each piece of evidence against the entry it names in ``memory`` (a thread store).

    Each entry is read once. Fails when the store fails; a missing entry makes its evidence
    ``'suggested'``.
    """
    try:
        items = [_as_evidence(e) for e in evidence]
    except Exception as exc:
        return err(f"invalid argument 'evidence': {exc}")
    cache: dict[str, Any] = {}
    checked: list[CheckedEvidence] = []
    for item in items:
        entry = None
        if item.entry_id:
            if item.entry_id not in cache:
                result = await memory.get_entry(item.entry_id)
                if not result.success:
                    return err(result.error or "get_entry failed", result.error_type)
                cache[item.entry_id] = result.data
            entry = cache[item.entry_id]
        checked.append(CheckedEvidence(status=verify_evidence(item, entry), evidence=item))
    return ok(checked)


def evidence_on_path(evidence: Iterable[Evidence | dict[str, Any]], path_ids: set[str] | frozenset[str]) -> bool:
    """Whether every piece of evidence that names an entry names one of ``path_ids`` (a branch),
    and at least one does."""
    named = [item.entry_id for item in map(_as_evidence, evidence) if item.entry_id]
    return bool(named) and all(entry_id in path_ids for entry_id in named)


__all__ = ["entry_text", "evidence_on_path", "verify_evidence", "verify_evidence_in_memory"]
