"""The records of memory items: what a conversation established, with its quotes, trust, scope and times.

A :class:`MemoryItem` is one fact, event, preference, instruction, opinion or lesson. It says
``value`` about ``subject`` (optionally under an ``attribute``: subject and attribute make its
*slot*, the place where a newer value supersedes an older one), stands on ``evidence`` (quotes
of thread entries), carries the ``trust`` of who said it and lives in a :class:`MemoryScope`.

Times are bitemporal. ``valid_from``/``valid_to`` say when the state held in the world
(``valid_to`` is where the slot's layout closed it: the start of the next state, or its own
end ``ends_at``); ``recorded_at``/``expired_at`` say when memory learned it and when memory
stopped believing it (a stale item).

Store-facing helpers (:func:`scope_key`, :func:`slot_key`, :class:`ItemQuery`) live here too,
so every engine indexes and filters items the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeAlias

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from ..clock import to_utc, utc_field
from ..errors import InvalidArgumentError
from ..threads import tree
from ..threads.records import ACTIVATED_AT_KEY, STALE_BECAUSE_KEY, Evidence, Record
from ..threads.values import MAX_INT, has_surrogate

ItemKind: TypeAlias = Literal["fact", "event", "preference", "instruction", "opinion", "lesson"]
Trust: TypeAlias = Literal["system", "user", "tool", "model", "web"]
ItemStatus: TypeAlias = Literal["suggested", "active", "superseded", "stale"]
#: The orders a query can give: by when memory recorded each item, or by when each state
#: started to hold (``valid_from``, else ``recorded_at``).
ItemOrder: TypeAlias = Literal["recorded", "start"]

#: Every kind of item.
ITEM_KINDS: tuple[ItemKind, ...] = ("fact", "event", "preference", "instruction", "opinion", "lesson")
#: Sources from the most trusted to the least: what the system wrote, what the user said, what a
#: tool returned, what a model said (another user's words count as the model's), what a web
#: page said.
TRUST_ORDER: tuple[Trust, ...] = ("system", "user", "tool", "model", "web")
#: Every status of an item.
ITEM_STATUSES: tuple[ItemStatus, ...] = ("suggested", "active", "superseded", "stale")
#: The statuses laid out by time in a slot (and read by default).
LAID_OUT_STATUSES: frozenset[ItemStatus] = frozenset({"active", "superseded"})

#: Limits of an item's text fields.
MAX_SUBJECT_CHARS = 500
MAX_ATTRIBUTE_CHARS = 200
MAX_VALUE_CHARS = 10_000
#: The most items one call may add, update, read or delete.
MAX_BATCH = 10_000

_SEP = "\x1f"  # ids and keys never hold control characters, so this separator cannot be forged


#: The validation context of records rebuilt from what a store kept (checked when written):
#: ``MemoryItem.model_validate_json(body, context=TRUSTED)`` skips the per-field checks.
TRUSTED: dict[str, bool] = {"trusted": True}


def _trusted(info: ValidationInfo) -> bool:
    return info.context is TRUSTED


def _checked_id(name: str, value: Any) -> str:
    try:
        return tree.check_id(name, value)
    except InvalidArgumentError as exc:
        raise ValueError(exc.problem) from None


def _text(value: str, name: str, limit: int, *, allow_empty: bool = False) -> str:
    if not allow_empty and not value.strip():
        raise ValueError("must not be empty")
    if len(value) > limit:
        raise ValueError(f"must be at most {limit} characters")
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    if has_surrogate(value):
        raise ValueError("must not contain lone surrogates (text UTF-8 cannot encode)")
    return value


class MemoryScope(Record):
    """Whose memory an item is: an agent's, and optionally narrowed to a user, a project, a thread.

    A scope *sees* the items of its agent whose every limit (user, project, thread) is either
    unset or its own: ``{agent, user: ana}`` sees the agent's shared items and Ana's, not Bo's.
    """

    agent_id: str
    user_id: str | None = None
    project_id: str | None = None
    thread_id: str | None = None

    @field_validator("agent_id")
    @classmethod
    def _agent(cls, value: str, info: ValidationInfo) -> str:
        if _trusted(info):
            return value
        return _checked_id("agent_id", value)

    @field_validator("user_id", "project_id", "thread_id")
    @classmethod
    def _limit(cls, value: str | None, info: ValidationInfo) -> str | None:
        if _trusted(info):
            return value
        return None if value is None else _checked_id("scope", value)

    @property
    def key(self) -> str:
        """The scope as one string (see :func:`scope_key`)."""
        return scope_key(self)

    def sees(self, other: MemoryScope) -> bool:
        """Whether this scope sees items kept in ``other``."""
        return (
            other.agent_id == self.agent_id
            and other.user_id in (None, self.user_id)
            and other.project_id in (None, self.project_id)
            and other.thread_id in (None, self.thread_id)
        )

    def holds(self, other: MemoryScope) -> bool:
        """Whether ``other`` is this scope or narrower (same agent, and every limit set here is
        the same there): the items a user's erasure or a thread's deletion reaches."""
        return (
            other.agent_id == self.agent_id
            and (self.user_id is None or other.user_id == self.user_id)
            and (self.project_id is None or other.project_id == self.project_id)
            and (self.thread_id is None or other.thread_id == self.thread_id)
        )


class ItemEvidence(Evidence):
    """A quote an item stands on: the words, the entry they are in and that entry's thread."""

    thread_id: str | None = None

    @model_validator(mode="after")
    def _encodable(self, info: ValidationInfo) -> ItemEvidence:
        if _trusted(info):
            return self
        texts = [self.quote, self.entry_id, self.thread_id, self.tool_call_id]
        if self.file_range is not None:
            texts.append(self.file_range.path)
        if any(text is not None and has_surrogate(text) for text in texts):
            raise ValueError("must not contain lone surrogates (text UTF-8 cannot encode)")
        if "\x00" in self.quote:
            raise ValueError("a quote must not contain NUL characters")
        return self


class Slot(Record):
    """Where values of one thing replace each other: a subject (or the entity it is linked to)
    and an attribute. ``Slot(subject="Ana", attribute="city")``."""

    subject: str
    attribute: str | None = None
    entity_id: str | None = None

    @property
    def subject_key(self) -> str:
        """See :func:`subject_key`."""
        return subject_key(self.subject, self.entity_id)

    @property
    def key(self) -> str:
        """See :func:`slot_key`."""
        return slot_key(self.subject, self.attribute, self.entity_id)


class _ItemContent(Record):
    """Fields shared by a new item and a stored one."""

    kind: ItemKind
    subject: str
    attribute: str | None = None
    value: str
    #: The entity the subject is linked to (the slot follows the entity, whatever the subject's words).
    entity_id: str | None = None
    #: Other entities the item names (the value's, for example).
    related_entity_ids: list[str] | None = None
    evidence: list[ItemEvidence] = Field(default_factory=list)
    trust: Trust
    #: Whether the quotes were checked against their entries and hold.
    verified: bool = False
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    scope: MemoryScope
    valid_from: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str, info: ValidationInfo) -> str:
        if _trusted(info):
            return value
        return _text(value, "subject", MAX_SUBJECT_CHARS)

    @field_validator("attribute")
    @classmethod
    def _attribute(cls, value: str | None, info: ValidationInfo) -> str | None:
        if _trusted(info):
            return value
        return None if value is None else _text(value, "attribute", MAX_ATTRIBUTE_CHARS)

    @field_validator("value")
    @classmethod
    def _value(cls, value: str, info: ValidationInfo) -> str:
        if _trusted(info):
            return value
        return _text(value, "value", MAX_VALUE_CHARS)

    @field_validator("entity_id")
    @classmethod
    def _entity(cls, value: str | None, info: ValidationInfo) -> str | None:
        if _trusted(info):
            return value
        return None if value is None else _checked_id("entity_id", value)

    @field_validator("related_entity_ids")
    @classmethod
    def _related(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if _trusted(info) or value is None:
            return value
        return [_checked_id("related_entity_ids", v) for v in value]

    @field_validator("valid_from")
    @classmethod
    def _utc(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if _trusted(info):
            return value
        return utc_field(value)

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if _trusted(info):
            return value
        try:
            return tree.check_metadata("metadata", value)
        except InvalidArgumentError as exc:
            raise ValueError(exc.problem) from None

    @property
    def slot(self) -> Slot:
        """The item's slot."""
        return Slot(subject=self.subject, attribute=self.attribute, entity_id=self.entity_id)

    @property
    def subject_key(self) -> str:
        """See :func:`subject_key`."""
        return subject_key(self.subject, self.entity_id)

    @property
    def slot_key(self) -> str:
        """See :func:`slot_key`."""
        return slot_key(self.subject, self.attribute, self.entity_id)


class NewMemoryItem(_ItemContent):
    """What :meth:`MemoryItems.add <cogitator_memory.items.service.MemoryItems.add>` takes.

    ``valid_to`` is the state's own end when it was told with one ("until 2021"); without it
    the state holds until the next value of its slot starts. ``verified`` says the quotes in
    ``evidence`` were checked against their entries and hold (an item without evidence cannot
    be verified). ``trust`` is who said it (see :data:`TRUST_ORDER`).
    """

    valid_to: datetime | None = None

    @field_validator("valid_to")
    @classmethod
    def _utc_end(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if _trusted(info):
            return value
        return utc_field(value)

    @model_validator(mode="after")
    def _check(self) -> NewMemoryItem:
        if self.valid_from is not None and self.valid_to is not None and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be after valid_from")
        if self.verified and not self.evidence:
            raise ValueError("an item without evidence cannot be verified")
        return self


class MemoryItem(_ItemContent):
    """One thing memory holds, as stored (see the module docstring for its times).

    ``status``: ``suggested`` (kept out of every context until activated), ``active`` (part of
    the slot's layout; it may have ended in the world since, see ``valid_to``), ``superseded``
    (closed by a later state, or ended) or ``stale`` (memory let it go: ``expired_at`` and
    ``metadata["stale_because"]`` say when and why). ``version`` grows with every update, for
    optimistic concurrency (see :class:`ItemUpdate`).
    """

    id: str
    status: ItemStatus
    #: Where the slot's layout closed the state (the next state's start, or ``ends_at``).
    valid_to: datetime | None = None
    #: The state's own end: told with one, or let go.
    ends_at: datetime | None = None
    recorded_at: datetime
    expired_at: datetime | None = None
    times_retrieved: int = Field(default=0, ge=0, le=MAX_INT)
    last_retrieved_at: datetime | None = None
    version: int = Field(default=1, ge=1, le=MAX_INT)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str, info: ValidationInfo) -> str:
        if _trusted(info):
            return value
        return _checked_id("id", value)

    @field_validator("valid_to", "ends_at", "recorded_at", "expired_at", "last_retrieved_at")
    @classmethod
    def _utc_times(cls, value: datetime | None, info: ValidationInfo) -> datetime | None:
        if _trusted(info):
            return value
        return utc_field(value)

    @property
    def start(self) -> datetime:
        """When the state starts: ``valid_from``, else when it was recorded."""
        return self.valid_from if self.valid_from is not None else self.recorded_at

    @property
    def stale_because(self) -> Any:
        """Why the item went stale (``metadata["stale_because"]``), or ``None``."""
        return self.metadata.get(STALE_BECAUSE_KEY)

    @property
    def activated_at(self) -> datetime | None:
        """When :meth:`MemoryItems.activate` made it active (``metadata["activated_at"]``), or ``None``."""
        raw = self.metadata.get(ACTIVATED_AT_KEY)
        if not isinstance(raw, str):
            return None
        try:
            return to_utc(datetime.fromisoformat(raw))
        except ValueError:
            return None

    @property
    def scope_key(self) -> str:
        """See :func:`scope_key`."""
        return scope_key(self.scope)


#: Fields an :class:`ItemUpdate` may change. The rest (id, kind, subject, attribute, value,
#: entity_id, scope, recorded_at) never change: a new value is a new item.
MUTABLE_FIELDS: frozenset[str] = frozenset(
    {
        "status",
        "valid_from",
        "valid_to",
        "ends_at",
        "expired_at",
        "evidence",
        "trust",
        "verified",
        "confidence",
        "metadata",
        "related_entity_ids",
        "times_retrieved",
        "last_retrieved_at",
    }
)


class ItemUpdate(Record):
    """A change of one stored item, made only if it is still at ``expected_version``.

    Only the fields given are changed; giving ``None`` clears a field (``valid_to=None``
    reopens a state). ``metadata`` replaces the item's metadata whole. The store raises
    :class:`~cogitator_memory.errors.ConflictError` when the item moved on since it was read.
    """

    id: str
    expected_version: int = Field(ge=1, le=MAX_INT)
    status: ItemStatus | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    ends_at: datetime | None = None
    expired_at: datetime | None = None
    evidence: list[ItemEvidence] | None = None
    trust: Trust | None = None
    verified: bool | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    metadata: dict[str, Any] | None = None
    related_entity_ids: list[str] | None = None
    #: Set only by stores without ``count_retrieved`` (read and written back under the agent's lock).
    times_retrieved: int | None = Field(default=None, ge=0, le=MAX_INT)
    last_retrieved_at: datetime | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _checked_id("id", value)

    @field_validator("valid_from", "valid_to", "ends_at", "expired_at", "last_retrieved_at")
    @classmethod
    def _utc_times(cls, value: datetime | None) -> datetime | None:
        return utc_field(value)

    @field_validator("related_entity_ids")
    @classmethod
    def _related(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_checked_id("related_entity_ids", v) for v in value]

    @field_validator("metadata")
    @classmethod
    def _metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        try:
            return tree.check_metadata("metadata", value)
        except InvalidArgumentError as exc:
            raise ValueError(exc.problem) from None

    @model_validator(mode="after")
    def _check(self) -> ItemUpdate:
        for name in ("status", "trust", "verified", "confidence", "evidence", "metadata", "times_retrieved"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be cleared")
        return self

    def changes(self) -> dict[str, Any]:
        """The fields this update sets (a ``None`` value clears the field)."""
        return {name: getattr(self, name) for name in self.model_fields_set if name in MUTABLE_FIELDS}

    def apply(self, item: MemoryItem) -> MemoryItem:
        """``item`` with the changes made and its version moved on (a new object).

        Raises :class:`ValueError` when the result is not a valid item. The fields are not checked
        one by one again (:data:`TRUSTED`): the item's were checked when it was written, the
        changes' when this update was made; their types and ranges are."""
        data = item.model_dump()
        for name, value in self.changes().items():
            data[name] = value.model_dump() if isinstance(value, Record) else value
        data["evidence"] = [e.model_dump() if isinstance(e, Record) else e for e in data.get("evidence") or []]
        data["version"] = item.version + 1
        return MemoryItem.model_validate(data, context=TRUSTED)


class MemoryItemFilter(Record):
    """Which items a store query returns. Give exactly one of ``visible_to``, ``scope`` or ``within``.

    - ``visible_to``: the items that scope sees (its agent's, each limit unset or its own).
    - ``scope``: the items kept in exactly that scope.
    - ``within``: the items kept in that scope or a narrower one (``{agent, user: ana}``: every
      item of Ana's under the agent, in any project or thread).

    The rest narrow further: ``statuses`` and ``kinds`` (``None``: any), ``slot`` (its key:
    subject or entity, and attribute) or ``slots`` (any of these, read in one query), ``subject`` (every slot of a subject or entity),
    ``entry_ids`` (items quoting any of these entries), ``as_of`` (the state held then in the
    world: ``start <= as_of < valid_to``, where ``start`` is ``valid_from`` or ``recorded_at``),
    ``known_at`` (memory knew it then: ``recorded_at <= known_at`` and not expired by then),
    ``recorded_after`` (recorded strictly after).

    ``order`` sorts the results, oldest first: ``recorded`` (the default) by when memory recorded
    each item, then by id; ``start`` by when each state started to hold, then when recorded, then
    by id (the order a slot's states are laid out in). ``limit`` keeps the newest in that order
    (0: all): with ``order="start"`` and ``as_of``, the states that started last of those that
    hold, read without reading the others.
    """

    visible_to: MemoryScope | None = None
    scope: MemoryScope | None = None
    within: MemoryScope | None = None
    statuses: list[ItemStatus] | None = None
    kinds: list[ItemKind] | None = None
    slot: Slot | None = None
    slots: list[Slot] | None = None
    subject: str | None = None
    entity_id: str | None = None
    entry_ids: list[str] | None = None
    as_of: datetime | None = None
    known_at: datetime | None = None
    recorded_after: datetime | None = None
    order: ItemOrder = "recorded"
    limit: int = Field(default=0, ge=0, le=MAX_INT)

    @field_validator("as_of", "known_at", "recorded_after")
    @classmethod
    def _utc_times(cls, value: datetime | None) -> datetime | None:
        return utc_field(value)

    @model_validator(mode="after")
    def _one_scope(self) -> MemoryItemFilter:
        given = [name for name in ("visible_to", "scope", "within") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of visible_to, scope or within")
        if self.slot is not None and self.slots is not None:
            raise ValueError("give slot or slots, not both")
        if self.entry_ids is not None:
            for entry_id in self.entry_ids:
                _checked_id("entry_ids", entry_id)
        return self


# --- keys every engine indexes by ------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def normalize_key_text(text: str) -> str:
    """Text as a key: runs of whitespace as one space, trimmed, case folded."""
    return " ".join(text.split()).casefold()


@functools.lru_cache(maxsize=8192)
def subject_key(subject: str, entity_id: str | None = None) -> str:
    """The key of a subject: ``e:<entity id>`` when linked to an entity, else ``s:`` and the
    subject's words, spacing and case aside."""
    return f"e:{entity_id}" if entity_id else f"s:{normalize_key_text(subject)}"


@functools.lru_cache(maxsize=8192)
def slot_key(subject: str, attribute: str | None, entity_id: str | None = None) -> str:
    """The key of a slot: the subject's key and the attribute's words (spacing and case aside).
    An item without an attribute has a key too, but no layout: its values do not replace each other."""
    return f"{subject_key(subject, entity_id)}{_SEP}{normalize_key_text(attribute) if attribute else ''}"


def scope_key(scope: MemoryScope) -> str:
    """The scope as one string: agent, user, project and thread (empty when unset), so a store
    finds a scope's items by one indexed equality."""
    return _SEP.join((scope.agent_id, scope.user_id or "", scope.project_id or "", scope.thread_id or ""))


def visible_scope_keys(scope: MemoryScope) -> list[str]:
    """The keys of every scope ``scope`` sees (at most 8): each limit unset or its own."""
    keys = [""]
    for part in (scope.user_id, scope.project_id, scope.thread_id):
        options = ["", part] if part is not None else [""]
        keys = [f"{k}{_SEP}{o}" for k in keys for o in options]
    return [f"{scope.agent_id}{k}" for k in keys]


# --- what engines receive ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ItemQuery:
    """A checked :class:`MemoryItemFilter` in the form engines use (built by the base class).

    ``scope_keys`` (for ``visible_to`` and ``scope``) lists the scope keys an item may have;
    with ``within`` it is ``None`` and ``agent_id`` plus ``within`` (the limits set) select.
    ``slot_keys`` (for ``slot`` or ``slots``) lists the slot keys an item may have. Times are aware UTC. :meth:`matches` is the reference every engine must agree with.
    """

    agent_id: str
    scope_keys: frozenset[str] | None
    within: MemoryScope | None
    statuses: frozenset[str] | None
    kinds: frozenset[str] | None
    slot_keys: frozenset[str] | None
    subject_key: str | None
    entry_ids: frozenset[str] | None
    as_of: datetime | None
    known_at: datetime | None
    recorded_after: datetime | None
    limit: int
    order: ItemOrder = "recorded"

    @property
    def sort_key(self) -> Callable[[MemoryItem], tuple[Any, ...]]:
        """The key of the query's order (see :class:`MemoryItemFilter`'s ``order``)."""
        return start_order if self.order == "start" else item_order

    def matches(self, item: MemoryItem) -> bool:
        """Whether ``item`` passes the query (every condition but ``limit``)."""
        if item.scope.agent_id != self.agent_id:
            return False
        if self.scope_keys is not None:
            if scope_key(item.scope) not in self.scope_keys:
                return False
        elif self.within is not None and not self.within.holds(item.scope):
            return False
        if self.statuses is not None and item.status not in self.statuses:
            return False
        if self.kinds is not None and item.kind not in self.kinds:
            return False
        if self.slot_keys is not None and item.slot_key not in self.slot_keys:
            return False
        if self.subject_key is not None and item.subject_key != self.subject_key:
            return False
        if self.entry_ids is not None and not any(e.entry_id in self.entry_ids for e in item.evidence):
            return False
        if self.as_of is not None and not (
            item.start <= self.as_of and (item.valid_to is None or item.valid_to > self.as_of)
        ):
            return False
        if self.known_at is not None and not (
            item.recorded_at <= self.known_at and (item.expired_at is None or item.expired_at > self.known_at)
        ):
            return False
        return self.recorded_after is None or item.recorded_at > self.recorded_after


def item_order(item: MemoryItem) -> tuple[datetime, str]:
    """The order of query results: oldest recorded first, then by id."""
    return (item.recorded_at, item.id)


def start_order(item: MemoryItem) -> tuple[datetime, datetime, str]:
    """The order of results by start (``order="start"``), and the order a slot's states are laid
    out in: by start, then when recorded, then by id."""
    return (item.start, item.recorded_at, item.id)


def _validated(model: type[Record], name: str, value: object) -> Any:
    if isinstance(value, model):
        return value
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a {model.__name__} or a dict, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


def check_scope(name: str, value: object) -> MemoryScope:
    """A :class:`MemoryScope` from a record or a dict; ``InvalidArgumentError`` naming the field."""
    scope: MemoryScope = _validated(MemoryScope, name, value)
    return scope


def check_slot(name: str, value: object) -> Slot:
    """A :class:`Slot` from a record, a dict or a ``(subject, attribute)`` pair."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise InvalidArgumentError(name, "a tuple must be (subject, attribute)")
        value = {"subject": value[0], "attribute": value[1]}
    slot: Slot = _validated(Slot, name, value)
    return slot


def check_new_item(name: str, value: object) -> NewMemoryItem:
    """A :class:`NewMemoryItem` from a record or a dict."""
    item: NewMemoryItem = _validated(NewMemoryItem, name, value)
    return item


def check_item(name: str, value: object) -> MemoryItem:
    """A :class:`MemoryItem` from a record or a dict (a dict is validated; a record is revalidated
    so that a record changed after it was built cannot slip past the checks)."""
    if isinstance(value, MemoryItem):
        try:
            return MemoryItem.model_validate(value.model_dump())
        except ValidationError as exc:
            raise tree.validation_error(name, exc) from None
    item: MemoryItem = _validated(MemoryItem, name, value)
    return item


def check_update(name: str, value: object) -> ItemUpdate:
    """An :class:`ItemUpdate` from a record or a dict (unknown and unchangeable fields refused)."""
    if isinstance(value, Mapping):
        fixed = [key for key in value if key not in MUTABLE_FIELDS and key not in ("id", "expected_version")]
        if fixed:
            raise InvalidArgumentError(f"{name}.{fixed[0]}", "cannot be changed: a new value is a new item")
    update: ItemUpdate = _validated(ItemUpdate, name, value)
    return update


def check_filter(value: object) -> ItemQuery:
    """The :class:`ItemQuery` of a filter given as a record or a dict."""
    flt: MemoryItemFilter = _validated(MemoryItemFilter, "filter", value)
    if flt.visible_to is not None:
        agent, keys, within = flt.visible_to.agent_id, frozenset(visible_scope_keys(flt.visible_to)), None
    elif flt.scope is not None:
        agent, keys, within = flt.scope.agent_id, frozenset({scope_key(flt.scope)}), None
    else:
        assert flt.within is not None
        agent, keys, within = flt.within.agent_id, None, flt.within
    statuses = _non_empty("filter.statuses", flt.statuses)
    kinds = _non_empty("filter.kinds", flt.kinds)
    entry_ids = _non_empty("filter.entry_ids", flt.entry_ids)
    slot_keys = frozenset({flt.slot.key}) if flt.slot is not None else None
    if flt.slots is not None:
        slot_keys = _non_empty("filter.slots", [slot.key for slot in flt.slots])
    if flt.subject is not None and flt.entity_id is None and not flt.subject.strip():
        raise InvalidArgumentError("filter.subject", "must not be empty")
    subject = None
    if flt.subject is not None or flt.entity_id is not None:
        subject = subject_key(flt.subject or "", flt.entity_id)
    return ItemQuery(
        agent_id=agent,
        scope_keys=keys,
        within=within,
        statuses=statuses,
        kinds=kinds,
        slot_keys=slot_keys,
        subject_key=subject,
        entry_ids=entry_ids,
        as_of=flt.as_of,
        known_at=flt.known_at,
        recorded_after=flt.recorded_after,
        limit=flt.limit,
        order=flt.order,
    )


def _non_empty(name: str, values: Iterable[str] | None) -> frozenset[str] | None:
    if values is None:
        return None
    chosen = frozenset(values)
    if not chosen:
        raise InvalidArgumentError(name, "must name at least one value (or be left out)")
    return chosen


__all__ = [
    "ITEM_KINDS",
    "ITEM_STATUSES",
    "LAID_OUT_STATUSES",
    "MAX_ATTRIBUTE_CHARS",
    "MAX_BATCH",
    "MAX_SUBJECT_CHARS",
    "MAX_VALUE_CHARS",
    "MUTABLE_FIELDS",
    "TRUSTED",
    "TRUST_ORDER",
    "ItemEvidence",
    "ItemKind",
    "ItemOrder",
    "ItemQuery",
    "ItemStatus",
    "ItemUpdate",
    "MemoryItem",
    "MemoryItemFilter",
    "MemoryScope",
    "NewMemoryItem",
    "Slot",
    "Trust",
    "check_filter",
    "check_item",
    "check_new_item",
    "check_scope",
    "check_slot",
    "check_update",
    "item_order",
    "normalize_key_text",
    "scope_key",
    "slot_key",
    "start_order",
    "subject_key",
    "visible_scope_keys",
]
