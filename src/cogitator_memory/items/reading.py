"""Reading the elements of an extraction answer: fields, quotes and who said them.

Both extractors (:class:`~cogitator_memory.items.extract.MemoryExtractor` for items and
:class:`~cogitator_memory.graph.extract.GraphExtractor` for entities and relations) ask a model
for a JSON array of objects that quote the numbered messages of a window, and read each object
the same way, with the pieces here:

- :func:`text_field` and :func:`confidence_field` read a field: null or blank counts as absent
  (:func:`is_absent`), a field of the wrong kind makes the element :class:`UnfitElement`;
- :class:`QuoteReader` reads an element's ``quotes`` (``[{"message": n, "quote": "..."}]``),
  each naming a message the window showed (:func:`message_number` reads ``3``, ``"3"``, ``"[3]"``
  or ``"message 3"``), and checks the words against that message's entry
  (:func:`~cogitator_memory.lineage.verify_evidence`, whitespace aside, case counting); each
  quote's trust is that of its entry (:func:`trust_of_entry`) and :func:`weigh_quotes` gives an
  element's trust and whether all its quotes hold;
- :func:`check_entries` and :func:`check_entries_by_ref` check what a caller passes.

An element that does not fit is left out and counted by the caller; :class:`UnfitElement`
carries why, for debugging only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..errors import InvalidArgumentError
from ..lineage import verify_evidence
from ..threads import tree
from ..threads.records import USER_ID_KEY, MemoryEntry
from .records import TRUST_ORDER, ItemEvidence, Trust
from .rules import least_trusted

#: The confidence of an element whose answer gave none.
DEFAULT_CONFIDENCE = 0.8

_ROLE_TRUST: dict[str, Trust] = {"system": "system", "user": "user", "assistant": "model", "tool": "tool"}
_MESSAGE_REF = re.compile(r"^\s*(?:message\s*)?[#\[(]?\s*(\d{1,9})\s*[\])]?\s*$", re.IGNORECASE)


class UnfitElement(Exception):
    """An element of an answer that does not fit what was asked for (the message says why)."""


# ----- trust ---------------------------------------------------------------------------------------


def trust_of_entry(entry: MemoryEntry, user_id: str | None = None) -> Trust:
    """Who said what an entry holds, as a trust level.

    A system message is ``system``; a user message is ``user``, unless ``user_id`` is given and the
    entry names another user (``metadata["user_id"]``): another user's words count as ``model``,
    so they never pass for the user's. An assistant message, a summary or any other event is
    ``model``; a tool message or tool result ``tool``. ``metadata["trust"]``, when it names a trust
    level, can only lower it (``"web"`` for a page a tool fetched), never raise it.
    """
    if not isinstance(entry, MemoryEntry):
        raise InvalidArgumentError("entry", f"must be a MemoryEntry, got {type(entry).__name__}")
    metadata = entry.metadata or {}
    trust: Trust
    if entry.message is not None:
        trust = _ROLE_TRUST[entry.message.role]
        speaker = metadata.get(USER_ID_KEY)
        if trust == "user" and user_id is not None and isinstance(speaker, str) and speaker != user_id:
            trust = "model"
    elif entry.type == "tool_result":
        trust = "tool"
    else:
        trust = "model"
    lowered = metadata.get("trust")
    if isinstance(lowered, str) and lowered in TRUST_ORDER:
        trust = least_trusted([trust, lowered])
    return trust


# ----- fields --------------------------------------------------------------------------------------


def is_absent(value: object) -> bool:
    """Whether an answer's field counts as not given: null, or a blank string."""
    return value is None or (isinstance(value, str) and not value.strip())


def text_field(element: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    """A text field: a string (trimmed) or a number written as text; null or blank is absent
    (``None``, or :class:`UnfitElement` when ``required``), anything else is unfit."""
    value = element.get(name)
    if is_absent(value):
        if required:
            raise UnfitElement(f"{name} is missing")
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise UnfitElement(f"{name} is not text")


def confidence_field(element: Mapping[str, Any], default: float = DEFAULT_CONFIDENCE) -> float:
    """The ``confidence`` field: a number from 0 to 1, ``default`` when absent."""
    confidence = element.get("confidence")
    if is_absent(confidence):
        return default
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        raise UnfitElement("confidence is not a number from 0 to 1")
    return float(confidence)


def message_number(value: object) -> int:
    """The message number a quote names: an integer, or text such as ``"3"``, ``"[3]"`` or
    ``"message 3"``; anything else is unfit."""
    if isinstance(value, bool):
        raise UnfitElement("a quote's message is not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        match = _MESSAGE_REF.match(value)
        if match:
            return int(match.group(1))
    raise UnfitElement("a quote's message is not a number")


# ----- quotes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExtractedQuote:
    """A quote an extracted item gave: the message number, the entry it names, the words, whether
    they are in that entry (``holds``), and the trust of that entry."""

    message: int
    entry_id: str
    thread_id: str
    quote: str
    holds: bool
    trust: Trust

    def evidence(self) -> ItemEvidence:
        """The quote as an item's evidence."""
        return ItemEvidence(entry_id=self.entry_id, thread_id=self.thread_id, quote=self.quote)


class QuoteReader:
    """Reads and checks the quotes of one window's answer elements against the entries it showed
    (``entries``: message number -> entry); ``user_id`` is the user whose messages count as
    ``user`` (:func:`trust_of_entry`, kept per entry)."""

    def __init__(self, entries: Mapping[int, MemoryEntry], user_id: str | None) -> None:
        self.entries = entries
        self.user_id = user_id
        self._trust: dict[str, Trust] = {}

    def trust(self, entry: MemoryEntry) -> Trust:
        """The trust of an entry (:func:`trust_of_entry`)."""
        trust = self._trust.get(entry.id)
        if trust is None:
            trust = self._trust[entry.id] = trust_of_entry(entry, self.user_id)
        return trust

    def pairs(self, raw: object) -> list[tuple[int, str]] | None:
        """``(message, words)`` of each quote given (one object or a list; quotes without words
        skipped); ``None`` when one names a message the window did not show. Unfit when there is
        no quote, or one is not an object or names no message number."""
        if isinstance(raw, Mapping):
            raw = [raw]
        if not isinstance(raw, list):
            raise UnfitElement("quotes is not a list")
        pairs: list[tuple[int, str]] = []
        unknown = False
        for quote in raw:
            if not isinstance(quote, Mapping):
                raise UnfitElement("a quote is not an object")
            words = quote.get("quote", quote.get("text"))
            if is_absent(words):
                continue
            if not isinstance(words, str):
                raise UnfitElement("a quote's words are not text")
            number = message_number(quote.get("message"))
            if number not in self.entries:
                unknown = True
            pairs.append((number, words.strip()))
        if not pairs:
            raise UnfitElement("no quote")
        return None if unknown else pairs

    def read(self, raw: object) -> tuple[ExtractedQuote, ...] | None:
        """The quotes given, each checked against its message's entry (see :meth:`pairs`);
        ``None`` when one names a message the window did not show."""
        pairs = self.pairs(raw)
        if pairs is None:
            return None
        quotes = []
        for number, words in pairs:
            entry = self.entries[number]
            try:
                evidence = ItemEvidence(entry_id=entry.id, thread_id=entry.thread_id, quote=words)
            except ValidationError:
                raise UnfitElement("a quote holds text a record cannot keep") from None
            holds = verify_evidence(evidence, entry) == "verified"
            quotes.append(ExtractedQuote(number, entry.id, entry.thread_id, words, holds, self.trust(entry)))
        return tuple(quotes)


def weigh_quotes(quotes: Sequence[ExtractedQuote]) -> tuple[Trust, bool]:
    """The trust of an element's quotes (that of the least trusted entry a holding quote is in,
    ``model`` when none holds) and whether every quote holds."""
    holding = [q.trust for q in quotes if q.holds]
    return (least_trusted(holding) if holding else "model"), len(holding) == len(quotes)


# ----- arguments -----------------------------------------------------------------------------------


def check_entries(entries: object) -> list[MemoryEntry]:
    """``entries`` as a list of :class:`~cogitator_memory.threads.MemoryEntry` (dicts validated);
    :class:`~cogitator_memory.errors.InvalidArgumentError` naming ``entries[i]`` otherwise."""
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Sequence):
        raise InvalidArgumentError("entries", "must be a list of entries")
    out = []
    for i, entry in enumerate(entries):
        if isinstance(entry, MemoryEntry):
            out.append(entry)
        elif isinstance(entry, Mapping):
            try:
                out.append(MemoryEntry.model_validate(entry))
            except ValidationError as exc:
                raise tree.validation_error(f"entries[{i}]", exc) from None
        else:
            raise InvalidArgumentError(f"entries[{i}]", f"must be a MemoryEntry or a dict, got {type(entry).__name__}")
    return out


def check_entries_by_ref(value: object) -> dict[int, MemoryEntry]:
    """``entries_by_ref`` (message number -> entry) checked: integer keys, entry values."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentError("entries_by_ref", "must map message numbers to entries")
    out: dict[int, MemoryEntry] = {}
    for key, entry in value.items():
        if isinstance(key, bool) or not isinstance(key, int):
            raise InvalidArgumentError("entries_by_ref", f"keys must be message numbers, got {key!r}")
        if not isinstance(entry, MemoryEntry):
            raise InvalidArgumentError(f"entries_by_ref[{key}]", f"must be a MemoryEntry, got {type(entry).__name__}")
        out[key] = entry
    return out


__all__ = [
    "DEFAULT_CONFIDENCE",
    "ExtractedQuote",
    "QuoteReader",
    "UnfitElement",
    "check_entries",
    "check_entries_by_ref",
    "confidence_field",
    "is_absent",
    "message_number",
    "text_field",
    "trust_of_entry",
    "weigh_quotes",
]
