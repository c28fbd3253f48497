"""Records of the recall index, and the store-independent rules on them (no I/O).

The recall index holds one :class:`RecallRecord` per thing memory can recall: a turn of any
thread, a memory item, a core fact, a graph fact (a node or an edge written as text) or a
section of a memory file. A record keeps what a search filters and ranks by: its scope
(``agent_id``, ``user_id``, ``thread_id``), its ``kind``, its ``text`` and the stemmed
``terms`` of it, when it was said (``said_at``) and the time it names, its ``status`` with the
interval it held, and the ids it comes from (``lineage``).

Scoping, written once here (:func:`record_in_scope`) and translated by every store into its own
query: with ``filter.user_id`` given, a record of another user is left out and a record of no
user is shared; the same for ``agent_id`` and ``thread_id``. Without the key there is no
scoping on it, and with ``user_id=NO_USER`` (:data:`NO_USER`, a user no record can belong to)
only the records of no user pass: the shared memory alone, asked inside the engine by the same
rule. A record's id is ``"<kind>:<source_id>"``, so a source is indexed once per kind.
"""

from __future__ import annotations

import sys
from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError, model_validator

from ..errors import InvalidArgumentError
from ..threads import tree
from ..threads.records import Record
from ..threads.tree import NO_USER as NO_USER  # re-exported: the scoping rule of filters
from .terms import recall_terms

RecallKind = Literal["turn", "item", "core_fact", "graph_fact", "file_section"]
"""What a record stands for."""
RecallStatus = Literal["active", "superseded", "stale"]
"""Whether the record's source still holds: ``superseded`` ones held from ``valid_from`` to
``valid_to``; ``stale`` ones were marked so by consolidation."""

RECALL_KINDS: tuple[RecallKind, ...] = get_args(RecallKind)
RECALL_STATUSES: tuple[RecallStatus, ...] = get_args(RecallStatus)
#: The statuses a search returns unless its filter names others.
DEFAULT_STATUSES: tuple[RecallStatus, ...] = ("active", "superseded")
#: Longest text (characters) of one record; longer text is cut there before it is indexed.
MAX_RECORD_CHARS = 20_000
#: Most records one write or one read by ids takes.
MAX_RECORD_BATCH = 5_000
#: Largest ``limit`` of one channel's search: a channel returns candidates, not a scan.
MAX_CANDIDATES = 1_000
#: Most query terms a keyword search uses (the first ones).
MAX_QUERY_TERMS = 64
#: The records one page of :meth:`~cogitator_memory.index.RecallIndexMixin.list_recall_records` holds by default.
RECALL_PAGE = 500


class RecallRecord(Record):
    """One recallable unit of memory (see the module docs).

    ``source_id`` is the id of what it stands for (the entry, the item, the fact...), ``id`` is
    ``"<kind>:<source_id>"``. ``role`` is who said a turn and ``name`` their name when the
    message carried one (``message.name``: the people of a chat between two or more); ``seq``
    its place in its thread.
    ``time_start``/``time_end`` is the time the text is about, when known (an item's time in
    the world); ``valid_from``/``valid_to`` the interval a superseded value held. ``terms`` are
    the stemmed search terms of ``text`` (:func:`~cogitator_memory.index.terms.recall_terms`),
    filled from the text when not given.
    """

    id: str
    kind: RecallKind
    source_id: str
    agent_id: str | None = None
    user_id: str | None = None
    thread_id: str | None = None
    role: str | None = None
    name: str | None = None
    seq: int | None = None
    text: str
    terms: list[str] = Field(default_factory=list)
    term_counts: list[int] = Field(default_factory=list)
    said_at: datetime
    time_start: datetime | None = None
    time_end: datetime | None = None
    status: RecallStatus = "active"
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    lineage: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _counted(self) -> RecallRecord:
        count_terms(self)
        return self

    @property
    def term_total(self) -> int:
        """How many terms the text holds in all (its length, for BM25)."""
        return sum(self.term_counts)

    def term_map(self) -> dict[str, int]:
        """Each term of the record -> how many times it occurs."""
        return dict(zip(self.terms, self.term_counts, strict=True))


def counted_terms(terms: Sequence[str]) -> tuple[list[str], list[int]]:
    """Each of ``terms`` (every occurrence, in order) once, in the order first said, and how
    many times it occurs."""
    held = Counter(terms)
    return list(held), list(held.values())


def count_terms(record: RecallRecord) -> None:
    """Make ``record`` hold each term once with its count (see :class:`RecallRecord`): from
    ``terms`` alone when no counts are given; raises :class:`ValueError` for counts that do not
    match the terms one to one, counts under 1 or a term given twice with counts."""
    counts = record.term_counts
    terms = record.terms
    if not counts:
        if terms:
            distinct, record.term_counts = counted_terms(terms)
            if len(distinct) != len(terms):
                record.terms = distinct
        return
    if len(counts) != len(terms):
        raise ValueError(f"term_counts must hold one count per term ({len(terms)}), got {len(counts)}")
    if len(set(terms)) != len(terms):
        raise ValueError("terms must hold each term once when term_counts are given")
    if min(counts) < 1:
        raise ValueError("term_counts must be whole numbers of at least 1")


#: The largest count :func:`pack_counts` keeps (a record's text is cut at MAX_RECORD_CHARS,
#: which holds fewer terms).
MAX_TERM_COUNT = 65_535


def pack_counts(counts: Sequence[int]) -> bytes:
    """``counts`` as the bytes an engine stores (two bytes each, little-endian)."""
    packed = array("H", counts)
    if sys.byteorder != "little":  # pragma: no cover - the machines this runs on are little-endian
        packed.byteswap()
    return packed.tobytes()


def unpack_counts(blob: bytes) -> list[int]:
    """The counts :func:`pack_counts` stored."""
    packed = array("H")
    packed.frombytes(blob)
    if sys.byteorder != "little":  # pragma: no cover
        packed.byteswap()
    return packed.tolist()


class RecallFilter(Record):
    """What a search of the index may return: the scope (see the module docs), the kinds
    (default all) and the statuses (default active and superseded)."""

    agent_id: str | None = None
    user_id: str | None = None
    thread_id: str | None = None
    kinds: list[RecallKind] | None = None
    statuses: list[RecallStatus] = Field(default_factory=lambda: list(DEFAULT_STATUSES))


class RecallCandidate(Record):
    """A record a channel found, with the channel's ``score`` (BM25 for keywords, higher is
    better; for time, newer first as ``said_at``'s seconds)."""

    record: RecallRecord
    score: float


class RecallPage(Record):
    """A page of the index's records in the engine's own order (every record once over a whole
    walk, see :meth:`~cogitator_memory.index.RecallIndexMixin.list_recall_records`);
    ``next_cursor`` goes on from here, ``None`` after the last page."""

    records: list[RecallRecord]
    next_cursor: str | None = None


class RecallPrune(Record):
    """What a page of :meth:`~cogitator_memory.index.RecallIndexMixin.prune_recall_records`
    did: records ``checked`` against their sources, those ``removed`` (their source is gone),
    and where the next page starts (``None`` after the last)."""

    checked: int = 0
    removed: int = 0
    next_cursor: str | None = None


def record_id(kind: RecallKind, source_id: str) -> str:
    """The id of the record of ``source_id`` as ``kind``."""
    return f"{kind}:{source_id}"


def _aware(name: str, value: datetime | None) -> None:
    if value is not None and value.tzinfo is None:
        raise InvalidArgumentError(name, "must be a timezone-aware datetime")


def check_record(value: object, where: str = "record") -> RecallRecord:
    """A valid :class:`RecallRecord` from a record or a dict of its fields: ids checked, the id
    matching its kind and source, the text cut at :data:`MAX_RECORD_CHARS` and its terms made
    when missing, aware times; raises :class:`InvalidArgumentError` naming the field."""
    if isinstance(value, RecallRecord):
        fields: dict[str, Any] = value.model_dump()
    elif isinstance(value, Mapping):
        fields = dict(value)
    else:
        raise InvalidArgumentError(where, f"must be a RecallRecord or a dict, got {type(value).__name__}")
    kind = fields.get("kind")
    source = fields.get("source_id")
    if "id" not in fields and isinstance(kind, str) and isinstance(source, str):
        fields["id"] = f"{kind}:{source}"
    try:
        record = RecallRecord.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        raise InvalidArgumentError(f"{where}.{loc}" if loc else where, first["msg"]) from None
    tree.check_id(f"{where}.source_id", record.source_id)
    for key in ("agent_id", "user_id", "thread_id"):
        tree.check_optional_id(f"{where}.{key}", getattr(record, key))
    if record.id != record_id(record.kind, record.source_id):
        raise InvalidArgumentError(f"{where}.id", f"must be '{record.kind}:{record.source_id}', got {record.id!r}")
    for key in ("said_at", "time_start", "time_end", "valid_from", "valid_to"):
        _aware(f"{where}.{key}", getattr(record, key))
    if record.time_start and record.time_end and record.time_end < record.time_start:
        raise InvalidArgumentError(f"{where}.time_end", "must not be before time_start")
    if len(record.text) > MAX_RECORD_CHARS:
        record.text = record.text[:MAX_RECORD_CHARS]
        record.terms = []
    if not record.terms:
        record.terms = recall_terms(record.text)
        record.term_counts = []
        count_terms(record)
    if max(record.term_counts, default=0) > MAX_TERM_COUNT:
        raise InvalidArgumentError(f"{where}.term_counts", f"must be at most {MAX_TERM_COUNT} each")
    return record


def check_records(values: object, name: str = "records") -> list[RecallRecord]:
    """Every record checked (:func:`check_record`), at most :data:`MAX_RECORD_BATCH`, ids unique."""
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence):
        raise InvalidArgumentError(name, "must be a list of records")
    if len(values) > MAX_RECORD_BATCH:
        raise InvalidArgumentError(name, f"must hold at most {MAX_RECORD_BATCH} records, got {len(values)}")
    records = [check_record(v, f"{name}[{i}]") for i, v in enumerate(values)]
    seen: set[str] = set()
    for i, record in enumerate(records):
        if record.id in seen:
            raise InvalidArgumentError(f"{name}[{i}].id", f"is given twice: {record.id}")
        seen.add(record.id)
    return records


def check_filter(value: object, name: str = "filter") -> RecallFilter:
    """A valid :class:`RecallFilter` from a filter, a dict of its fields or ``None`` (no scoping)."""
    if value is None:
        return RecallFilter()
    if isinstance(value, RecallFilter):
        flt = value
    elif isinstance(value, Mapping):
        try:
            flt = RecallFilter.model_validate(dict(value))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(part) for part in first["loc"])
            raise InvalidArgumentError(f"{name}.{loc}" if loc else name, first["msg"]) from None
    else:
        raise InvalidArgumentError(name, f"must be a RecallFilter or a dict, got {type(value).__name__}")
    for key in ("agent_id", "thread_id"):
        tree.check_optional_id(f"{name}.{key}", getattr(flt, key))
    tree.check_filter_user(f"{name}.user_id", flt.user_id)
    if flt.kinds is not None and not flt.kinds:
        raise InvalidArgumentError(f"{name}.kinds", "must name at least one kind (or be left out for all)")
    if not flt.statuses:
        raise InvalidArgumentError(f"{name}.statuses", "must name at least one status")
    return flt


def check_limit(value: object, name: str = "limit") -> int:
    """A channel's ``limit``: an integer from 1 to :data:`MAX_CANDIDATES`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CANDIDATES:
        raise InvalidArgumentError(name, f"must be an integer from 1 to {MAX_CANDIDATES}, got {value!r}")
    return value


def check_ids(values: object, name: str) -> list[str]:
    """A list of ids (each checked), at most :data:`MAX_RECORD_BATCH`, duplicates dropped."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise InvalidArgumentError(name, "must be a list of ids")
    if len(values) > MAX_RECORD_BATCH:
        raise InvalidArgumentError(name, f"must hold at most {MAX_RECORD_BATCH} ids, got {len(values)}")
    return list(dict.fromkeys(tree.check_id(f"{name}[{i}]", v) for i, v in enumerate(values)))


def _shared_or(value: str | None, wanted: str | None) -> bool:
    return wanted is None or value is None or value == wanted


def record_in_scope(record: RecallRecord, flt: RecallFilter) -> bool:
    """Whether ``flt`` lets ``record`` through (the rule every store translates)."""
    return (
        _shared_or(record.agent_id, flt.agent_id)
        and _shared_or(record.user_id, flt.user_id)
        and _shared_or(record.thread_id, flt.thread_id)
        and (flt.kinds is None or record.kind in flt.kinds)
        and record.status in flt.statuses
    )


def without_turns(flt: RecallFilter) -> bool:
    """Whether ``flt`` names kinds and turns are not among them (a search of items, facts or
    file sections only: an engine may keep the postings of records that are not turns first)."""
    return flt.kinds is not None and "turn" not in flt.kinds


def names_time_in(record: RecallRecord, start: datetime, end: datetime) -> bool:
    """Whether the time ``record`` names overlaps ``[start, end)``: a range ``[time_start,
    time_end)`` that meets it, or a moment ``time_start`` (no ``time_end``) inside it."""
    if record.time_start is None:
        return False
    if record.time_end is None:
        return start <= record.time_start < end
    return record.time_start < end and record.time_end > start


__all__ = [
    "MAX_CANDIDATES",
    "MAX_QUERY_TERMS",
    "MAX_RECORD_BATCH",
    "MAX_RECORD_CHARS",
    "MAX_TERM_COUNT",
    "RECALL_KINDS",
    "RECALL_PAGE",
    "RECALL_STATUSES",
    "RecallCandidate",
    "RecallFilter",
    "RecallKind",
    "RecallPage",
    "RecallPrune",
    "RecallRecord",
    "RecallStatus",
    "check_filter",
    "check_ids",
    "check_limit",
    "check_record",
    "check_records",
    "count_terms",
    "counted_terms",
    "names_time_in",
    "pack_counts",
    "record_id",
    "record_in_scope",
    "unpack_counts",
    "without_turns",
]
