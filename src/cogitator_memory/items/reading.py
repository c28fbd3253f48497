"""Reading the elements of an extraction answer: fields, quotes and who said them.

Both readers of the extraction pipeline (:class:`~cogitator_memory.items.extract.MemoryExtractor`
for items and :class:`~cogitator_memory.graph.extract.GraphExtractor` for entities and relations)
ask a model for a JSON array of objects that quote the numbered messages of a window, and read
each object the same way, with the pieces here:

- :func:`text_field` and :func:`confidence_field` read a field: null or blank counts as absent
  (:func:`is_absent`), a field of the wrong kind makes the element :class:`UnfitElement`;
- :class:`QuoteReader` reads an element's ``quotes`` (``[{"message": n, "quote": "..."}]``),
  each naming a message the window showed (:func:`message_number` reads ``3``, ``"3"``, ``"[3]"``
  or ``"message 3"``), and checks the words against that message's entry
  (:func:`~cogitator_memory.lineage.verify_evidence`, whitespace aside, case counting); each
  quote's trust is that of its entry (:func:`trust_of_entry`) and :func:`weigh_quotes` gives an
  element's trust and whether all its quotes hold and support what it claims;
- :func:`supports` is the support rule: a quote that holds proves only that its words were said,
  so what an element claims (an item's value, an entity's name, a relation's ends) must be said
  by its holding quotes too. The claim's content words (:func:`content_terms`: the tokens of
  :func:`~cogitator_memory.search.tokenize`, Unicode case-folded, CJK one character a token,
  English stopwords and lone ASCII letters left out, lightly stemmed by :func:`stem`) are looked
  up among those of the quotes; at least :data:`SUPPORT_SHARE` (two thirds) of the distinct
  ones must be there (all of them when the claim has one or two). A claim without content
  words (``"no"``, ``"?"``) must be in the quotes as written, spacing and case aside. An element
  whose claim is not supported is treated as one whose quotes fail: not verified, so never
  active on its own;
- :func:`read_elements` reads every element of an answer with the reader's function of one
  element (counting what did not fit and what named a message not shown), and
  :func:`answer_to_read` checks the arguments of a reader's ``parse`` function and finds the
  answer's elements;
- :func:`check_entries` (:mod:`cogitator_memory.extraction.windows`'s) and
  :func:`check_entries_by_ref` check what a caller passes.

An element that does not fit is left out and counted by the caller; :class:`UnfitElement`
carries why, for debugging only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from ..errors import InvalidArgumentError
from ..extraction.windows import check_entries
from ..lineage import verify_evidence
from ..models.json_array import read_json_array
from ..recall.time import zone_of
from ..search.tokenizer import ENGLISH_STOPWORDS, tokenize
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


# ----- support -------------------------------------------------------------------------------------

#: The share of a claim's distinct content words its holding quotes must say for the claim to be
#: supported (see :func:`supports`): two thirds, so a claim of one or two content words needs
#: all of them, one of three to five may be missing, and so on.
SUPPORT_SHARE = (2, 3)

#: Suffixes :func:`stem` takes off (the first that matches, leaving at least three letters), with
#: what replaces them.
_SUFFIXES = (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))
_VOWELS = frozenset("aeiouy")


def stem(term: str) -> str:
    """A light English stem of one lower-case term, so that the forms of a word meet (``lives``,
    ``lived``, ``living`` and ``live`` all give ``liv``; ``cities`` and ``city`` give ``city``):
    the first of ``-ies`` (to ``-y``), ``-ing``, ``-ed``, ``-es``, ``-s`` that leaves three
    letters or more is taken off, then a doubled final consonant is made single and a final
    ``e`` dropped (each leaving more than three letters). Terms that are not all ASCII letters
    (numbers, other scripts) are returned as they are."""
    if not (term.isascii() and term.isalpha()):
        return term
    for suffix, replacement in _SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= 3:
            term = term[: -len(suffix)] + replacement
            break
    if len(term) > 3 and term[-1] == term[-2] and term[-1] not in _VOWELS:
        term = term[:-1]
    if len(term) > 3 and term.endswith("e"):
        term = term[:-1]
    return term


def content_terms(text: str) -> frozenset[str]:
    """The content words of ``text`` as :func:`supports` compares them: the tokens of
    :func:`~cogitator_memory.search.tokenize` (NFKC, case-folded; Chinese and Japanese one
    character a token), without English stopwords and lone ASCII letters, each :func:`stem` med."""
    tokens = tokenize(text, cjk="chars", stopwords=ENGLISH_STOPWORDS)
    return frozenset(stem(t) for t in tokens if not (len(t) == 1 and t.isascii() and t.isalpha()))


def supports(quotes: Iterable[str], claim: str) -> bool:
    """Whether ``quotes`` (the words of the quotes that hold) say ``claim``: at least
    :data:`SUPPORT_SHARE` of the claim's distinct :func:`content_terms` are among theirs; a
    claim without content words must be in the quotes as written (spacing and case aside). No
    quote supports nothing."""
    said = [q for q in quotes if q.strip()]
    if not said:
        return False
    wanted = content_terms(claim)
    if not wanted:
        needle = " ".join(claim.split()).casefold()
        return bool(needle) and any(needle in " ".join(q.split()).casefold() for q in said)
    found = frozenset().union(*(content_terms(q) for q in said))
    share, of = SUPPORT_SHARE
    return len(wanted & found) * of >= len(wanted) * share


def weigh_quotes(quotes: Sequence[ExtractedQuote], claim: str | None = None) -> tuple[Trust, bool]:
    """The trust of an element's quotes (that of the least trusted entry a holding quote is in,
    ``model`` when none holds) and whether it is verified: every quote holds and, when a
    ``claim`` is given, the holding quotes :func:`supports` it."""
    holding = [q for q in quotes if q.holds]
    trust = least_trusted([q.trust for q in holding]) if holding else "model"
    verified = len(holding) == len(quotes)
    if verified and claim is not None:
        verified = supports((q.quote for q in holding), claim)
    return trust, verified


# ----- arguments -----------------------------------------------------------------------------------


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


# ----- answers -------------------------------------------------------------------------------------

R = TypeVar("R")


@dataclass
class ElementsRead(Generic[R]):
    """What :func:`read_elements` read: the ``records`` that fit, how many elements did not
    (``dropped``: :class:`UnfitElement`) and how many named a message the window did not show
    (``unknown_messages``, left out too)."""

    records: list[R] = field(default_factory=list)
    dropped: int = 0
    unknown_messages: int = 0


def read_elements(elements: Iterable[object], read: Callable[[Mapping[str, Any]], R | None]) -> ElementsRead[R]:
    """Each element of an answer read by the reader's ``read(element)``: the record, ``None`` when
    it names a message the window did not show, :class:`UnfitElement` when it does not fit (as an
    element that is not an object does not)."""
    out: ElementsRead[R] = ElementsRead()
    for element in elements:
        try:
            if not isinstance(element, Mapping):
                raise UnfitElement("not an object")
            record = read(element)
        except UnfitElement:
            out.dropped += 1
            continue
        if record is None:
            out.unknown_messages += 1
        else:
            out.records.append(record)
    return out


@dataclass(frozen=True)
class AnswerToRead:
    """The arguments of a reader's ``parse`` function, checked (see :func:`answer_to_read`)."""

    elements: list[Any]
    entries: dict[int, MemoryEntry]
    user_id: str | None
    zone: tzinfo


def answer_to_read(
    text: str, entries_by_ref: Mapping[int, MemoryEntry], user_id: str | None, time_zone: str | tzinfo
) -> AnswerToRead:
    """What a reader's ``parse`` function reads, its arguments checked: the elements of the JSON
    array of ``text`` (found past any text and brackets around it; those that are not JSON objects
    left out), ``entries_by_ref`` (:func:`check_entries_by_ref`), ``user_id`` and ``time_zone``."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    entries = check_entries_by_ref(entries_by_ref)
    user = tree.check_optional_id("user_id", user_id)
    zone = zone_of(time_zone)
    return AnswerToRead(read_json_array(text, objects=True).elements, entries, user, zone)


__all__ = [
    "DEFAULT_CONFIDENCE",
    "SUPPORT_SHARE",
    "AnswerToRead",
    "ElementsRead",
    "ExtractedQuote",
    "QuoteReader",
    "UnfitElement",
    "answer_to_read",
    "check_entries",
    "check_entries_by_ref",
    "confidence_field",
    "content_terms",
    "is_absent",
    "message_number",
    "read_elements",
    "stem",
    "supports",
    "text_field",
    "trust_of_entry",
    "weigh_quotes",
]
