"""Reading a graph extraction answer: the entities and relations it gives, their quotes checked,
and what of them may be written (:func:`select_writable`). Used by
:class:`~cogitator_memory.graph.extract.GraphExtractor`; see :mod:`cogitator_memory.graph.extract`
for the rules.

Fields and quotes are read as the item extractor reads them (:mod:`cogitator_memory.items.reading`):
each quote names a message the window showed and holds when its words are in that message
(:func:`~cogitator_memory.lineage.verify_evidence`, whitespace aside); its trust is that of the
message (:func:`~cogitator_memory.items.reading.trust_of_entry`). An entity is verified only when
its quotes also say its name (:func:`~cogitator_memory.items.reading.supports`, the rule items
follow for their values), except :data:`USER_ENTITY`, the name the prompt gives the user; a
relation's ends are entities checked so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from typing import Any

from ..errors import InvalidArgumentError
from ..items.reading import (
    ExtractedQuote,
    QuoteReader,
    UnfitElement,
    answer_to_read,
    confidence_field,
    is_absent,
    read_elements,
    text_field,
    weigh_quotes,
)
from ..items.records import TRUST_ORDER, Trust
from ..items.rules import least_trusted, trust_rank
from ..threads.records import MemoryEntry
from .base import check_edge, check_node
from .records import name_key

#: The name the prompt gives the person whose messages are from the user: quotes need not say it.
USER_ENTITY = "user"
#: The type of an entity whose answer gave none.
DEFAULT_ENTITY_TYPE = "concept"


@dataclass(frozen=True)
class ExtractedEntity:
    """An entity of a model's answer, read and checked: ``verified`` when every quote holds,
    ``trust`` the least trusted message a holding quote is in (``model`` when none holds)."""

    name: str
    type: str
    aliases: tuple[str, ...]
    description: str | None
    confidence: float
    quotes: tuple[ExtractedQuote, ...]
    trust: Trust
    verified: bool

    @property
    def keys(self) -> list[str]:
        """The lookup keys of its name and aliases (:func:`~cogitator_memory.graph.records.name_key`)."""
        return list(dict.fromkeys(name_key(n) for n in (self.name, *self.aliases)))


@dataclass(frozen=True)
class ExtractedRelation:
    """A relation of a model's answer, ``source --type--> target`` by entity names, read and
    checked as :class:`ExtractedEntity` is."""

    type: str
    source: str
    target: str
    label: str | None
    confidence: float
    quotes: tuple[ExtractedQuote, ...]
    trust: Trust
    verified: bool


@dataclass
class GraphAnswer:
    """What :func:`parse_graph_extraction` read from an answer: the entities and relations that
    fit, how many elements did not fit (``dropped``: not an object, neither an entity nor a
    relation, a required field missing or of the wrong type, past a record's limits) and how many
    named a message the window did not show (``unknown_messages``, left out too)."""

    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)
    dropped: int = 0
    unknown_messages: int = 0


def _word(value: str | None) -> str | None:
    """A type as records keep it: lower case, spaces as ``_``."""
    return None if value is None else "_".join(value.lower().split())


def _names(element: Mapping[str, Any], key: str) -> tuple[str, ...]:
    raw = element.get(key)
    if is_absent(raw):
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise UnfitElement(f"{key} is not a list of names")
    return tuple(dict.fromkeys(v.strip() for v in raw if v.strip()))


_PLACEHOLDER = {"agent_id": "extraction"}


class GraphAnswerReader:
    """Reads the elements of one window's graph answers against the entries it showed
    (``entries``: message number -> entry; ``user_id`` as for
    :func:`~cogitator_memory.items.reading.trust_of_entry`) into a :class:`GraphAnswer`."""

    def __init__(self, entries: Mapping[int, MemoryEntry], user_id: str | None) -> None:
        self.quotes = QuoteReader(entries, user_id)

    def read(self, elements: Sequence[Any]) -> GraphAnswer:
        read = read_elements(elements, self._element)
        return GraphAnswer(
            entities=[r for r in read.records if isinstance(r, ExtractedEntity)],
            relations=[r for r in read.records if isinstance(r, ExtractedRelation)],
            dropped=read.dropped,
            unknown_messages=read.unknown_messages,
        )

    def _element(self, element: Mapping[str, Any]) -> ExtractedEntity | ExtractedRelation | None:
        entity, relation = text_field(element, "entity"), _word(text_field(element, "relation"))
        if (entity is None) == (relation is None):
            raise UnfitElement("neither an entity nor a relation, or both")
        confidence = confidence_field(element)
        quotes = self.quotes.read(element.get("quotes"))
        if quotes is None:
            return None
        claim = entity if entity is not None and name_key(entity) != USER_ENTITY else None
        trust, verified = weigh_quotes(quotes, claim)
        try:  # the limits of a record (text lengths, type words, NUL, surrogates) decide whether it fits
            if entity is not None:
                kind = _word(text_field(element, "type")) or DEFAULT_ENTITY_TYPE
                aliases = tuple(a for a in _names(element, "aliases") if name_key(a) != name_key(entity))
                description = text_field(element, "description")
                check_node(
                    "entity",
                    {
                        **_PLACEHOLDER,
                        "name": entity,
                        "type": kind,
                        "aliases": list(aliases),
                        "description": description,
                    },
                )
                return ExtractedEntity(entity, kind, aliases, description, confidence, quotes, trust, verified)
            source = text_field(element, "source", required=True)
            target = text_field(element, "target", required=True)
            assert source is not None and target is not None and relation is not None
            if name_key(source) == name_key(target):
                raise UnfitElement("a relation of an entity to itself")
            label = text_field(element, "label")
            check_edge(
                "relation", {**_PLACEHOLDER, "source_id": "a", "target_id": "b", "type": relation, "label": label}
            )
            return ExtractedRelation(relation, source, target, label, confidence, quotes, trust, verified)
        except InvalidArgumentError:
            raise UnfitElement("past the limits of a graph record") from None


def parse_graph_extraction(
    text: str,
    entries_by_ref: Mapping[int, MemoryEntry],
    *,
    user_id: str | None = None,
    time_zone: str | tzinfo = "UTC",
) -> GraphAnswer:
    """The entities and relations of one graph extraction answer, read against the entries its
    messages showed (``entries_by_ref``: message number -> entry), as the module docstring says.

    Elements are objects with ``entity`` (and ``type``, ``aliases``, ``description``) or
    ``relation`` (and ``source``, ``target``, ``label``), ``quotes`` and ``confidence``; null
    and blank fields count as absent, an element that does not fit is counted and left out. Nothing
    is left out for its quotes here: :func:`select_writable` decides what may be written.
    """
    answer = answer_to_read(text, entries_by_ref, user_id, time_zone)  # the zone checked, as for items
    return GraphAnswerReader(answer.entries, answer.user_id).read(answer.elements)


@dataclass
class Writable:
    """What :func:`select_writable` keeps: entities (one per name, the others folded in) and
    relations by entity, with counts of what it left out: ``unverified`` (a quote did not hold),
    ``untrusted`` (from a source less trusted than ``min_trust``) and ``unknown_entities``
    (relations naming an entity not kept)."""

    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[tuple[ExtractedEntity, ExtractedRelation, ExtractedEntity]] = field(default_factory=list)
    unverified: int = 0
    untrusted: int = 0
    unknown_entities: int = 0


def _fold(first: ExtractedEntity, other: ExtractedEntity) -> ExtractedEntity:
    keys = set(first.keys)
    aliases = list(first.aliases)
    for name in (other.name, *other.aliases):
        if name_key(name) not in keys:
            keys.add(name_key(name))
            aliases.append(name)
    return ExtractedEntity(
        first.name,
        first.type,
        tuple(aliases),
        first.description or other.description,
        max(first.confidence, other.confidence),
        (*first.quotes, *other.quotes),
        least_trusted([first.trust, other.trust]),
        first.verified and other.verified,
    )


def select_writable(answer: GraphAnswer, *, min_trust: Trust = "user") -> Writable:
    """The entities and relations of ``answer`` that may be written: every quote holding, from a
    source at least as trusted as ``min_trust``, and for a relation both ends among the entities
    kept (found by name or alias, case and spacing aside). Entities sharing a name or an alias
    are one (the first, with the others' aliases and quotes); so are relations of the same ends
    and type."""
    if min_trust not in TRUST_ORDER:
        raise InvalidArgumentError("min_trust", f"must be one of {', '.join(TRUST_ORDER)}")
    out = Writable()
    floor = trust_rank(min_trust)

    def passes(record: ExtractedEntity | ExtractedRelation) -> bool:
        if not record.verified:
            out.unverified += 1
            return False
        if trust_rank(record.trust) > floor:
            out.untrusted += 1
            return False
        return True

    by_key: dict[str, int] = {}
    for entity in answer.entities:
        if not passes(entity):
            continue
        index = next((by_key[k] for k in entity.keys if k in by_key), None)
        if index is None:
            index = len(out.entities)
            out.entities.append(entity)
        else:
            out.entities[index] = _fold(out.entities[index], entity)
        for key in out.entities[index].keys:
            by_key.setdefault(key, index)
    seen: dict[tuple[int, str, int], int] = {}
    for relation in answer.relations:
        if not passes(relation):
            continue
        source, target = by_key.get(name_key(relation.source)), by_key.get(name_key(relation.target))
        if source is None or target is None:
            out.unknown_entities += 1
            continue
        if source == target:
            out.unknown_entities += 1
            continue
        pair = (source, relation.type, target)
        if pair in seen:
            _, old, _ = out.relations[seen[pair]]
            merged = ExtractedRelation(
                old.type,
                old.source,
                old.target,
                old.label or relation.label,
                max(old.confidence, relation.confidence),
                (*old.quotes, *relation.quotes),
                least_trusted([old.trust, relation.trust]),
                True,
            )
            out.relations[seen[pair]] = (out.entities[source], merged, out.entities[target])
            continue
        seen[pair] = len(out.relations)
        out.relations.append((out.entities[source], relation, out.entities[target]))
    # entities folded after a relation named them: point relations at the final records
    out.relations = [
        (out.entities[by_key[name_key(r.source)]], r, out.entities[by_key[name_key(r.target)]])
        for _, r, _ in out.relations
    ]
    return out


__all__ = [
    "DEFAULT_ENTITY_TYPE",
    "USER_ENTITY",
    "ExtractedEntity",
    "ExtractedRelation",
    "GraphAnswer",
    "GraphAnswerReader",
    "Writable",
    "parse_graph_extraction",
    "select_writable",
]
