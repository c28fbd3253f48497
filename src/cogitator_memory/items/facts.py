"""Facts: long-term knowledge an application writes for an agent, kept as memory items.

The spec's ``FactAdapter`` (``add_fact``, ``get_fact``, ``get_facts``, ``update_fact``,
``delete_fact``, ``search_facts``) is written once here, over the item contract, in
:class:`FactStoreMixin`; :class:`~cogitator_memory.items.base.MemoryItemStoreMixin` inherits it,
so every store that keeps items keeps facts as well, and facts follow the item rules (a changed
fact is a new state of its slot, the old one kept in its history).

How a fact is kept:

- the fact ``fact_...`` is the slot (``subject`` :data:`FACT_SUBJECT`, ``attribute`` the fact's
  id) of items in the scope ``{agent_id, user_id: metadata.user_id}``: a fact with a user is seen
  only in that user's scope, one without by everyone the agent serves;
- its first state is the item whose id *is* the fact id (later states get ``mem_...`` ids), so
  :meth:`FactStoreMixin.get_fact` finds it without knowing the agent;
- ``content`` is the item's value, ``confidence`` its confidence, ``evidence`` its quotes,
  ``expires_at`` its own end (``ends_at``: an expired fact no longer holds and is not returned),
  ``trust`` is ``system`` (the application wrote it, so it is active at once) and ``kind`` is the
  category when that names an item kind (``preference``, ``instruction``...), else ``fact``;
- ``category``, ``source`` and the times the item has no field for are kept under
  ``metadata["fact"]`` (:data:`FACT_KEY`); the rest of ``metadata`` is the fact's own.

See ``docs/facts.md``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, cast, runtime_checkable

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from .. import clock
from ..errors import ConflictError, InvalidArgumentError, NotFoundError
from ..ids import new_id
from ..result import MemoryResult, ok, ok_none, unwrap
from ..search.bm25 import BM25Index
from ..threads import tree
from ..threads.records import ACTIVATED_AT_KEY, STALE_BECAUSE_KEY, Record
from ..threads.values import check_text, has_surrogate
from . import rules
from ._fact_items import FactItems
from .contract import MemoryItemAdapter
from .records import (
    ITEM_KINDS,
    LAID_OUT_STATUSES,
    MAX_VALUE_CHARS,
    ItemEvidence,
    ItemKind,
    ItemUpdate,
    MemoryItem,
    NewMemoryItem,
)

FactOrigin: TypeAlias = Literal["user", "inferred", "system"]

#: Where a fact came from, as the application tells it.
FACT_ORIGINS: tuple[FactOrigin, ...] = ("user", "inferred", "system")
#: The subject of every fact's slot (its attribute is the fact id).
FACT_SUBJECT = "fact"
#: The metadata key of the fields a fact has and an item does not (category, source, times).
FACT_KEY = "fact"
#: The category of a fact added without one.
DEFAULT_CATEGORY = "general"
MAX_CATEGORY_CHARS = 200
#: Metadata keys memory writes itself, left out of a fact's ``metadata``.
_OWN_KEYS = frozenset({FACT_KEY, STALE_BECAUSE_KEY, ACTIVATED_AT_KEY})
#: How many times an in-place update reads the fact again after a racing writer moved it on.
_ROUNDS = 12


def _text(value: str, limit: int) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    if len(value) > limit:
        raise ValueError(f"must be at most {limit} characters")
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    if has_surrogate(value):
        raise ValueError("must not contain lone surrogates (text UTF-8 cannot encode)")
    return value


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    try:
        checked = tree.check_metadata("metadata", value)
    except InvalidArgumentError as exc:
        raise ValueError(exc.problem) from None
    if FACT_KEY in checked:
        raise ValueError(f"the key {FACT_KEY!r} is kept by memory: use another key")
    user = checked.get("user_id")
    if user is not None:
        try:
            tree.check_id("user_id", user)
        except InvalidArgumentError as exc:
            raise ValueError(f"user_id {exc.problem}") from None
    return checked


class _FactFields(Record):
    """The checks of the fields :class:`NewFact` and :class:`FactUpdate` share (``None``, which
    only an update may give, passes: the field is left as it is)."""

    @field_validator("content", check_fields=False)
    @classmethod
    def _content(cls, value: str | None) -> str | None:
        return None if value is None else _text(value, MAX_VALUE_CHARS)

    @field_validator("category", check_fields=False)
    @classmethod
    def _category(cls, value: str | None) -> str | None:
        return None if value is None else _text(value, MAX_CATEGORY_CHARS)

    @field_validator("metadata", check_fields=False)
    @classmethod
    def _meta(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if value is None else _metadata(value)

    @field_validator("expires_at", check_fields=False)
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else clock.to_utc(value)


class NewFact(_FactFields):
    """What :meth:`FactStoreMixin.add_fact` takes.

    ``metadata["user_id"]`` scopes the fact to one user (without it, every user of the agent sees
    it). ``expires_at`` is when it stops holding. ``evidence`` lists the quotes it stands on.
    """

    agent_id: str
    content: str
    category: str = DEFAULT_CATEGORY
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    source: FactOrigin = "user"
    metadata: dict[str, Any] = Field(default_factory=dict)
    evidence: list[ItemEvidence] = Field(default_factory=list)
    expires_at: datetime | None = None

    @field_validator("agent_id")
    @classmethod
    def _agent(cls, value: str) -> str:
        try:
            return tree.check_id("agent_id", value)
        except InvalidArgumentError as exc:
            raise ValueError(exc.problem) from None


class FactUpdate(_FactFields):
    """A change of a fact: only the fields given change (``expires_at=None`` makes it hold for
    good). A new ``content`` is a new state of the fact (the old one stays in its history); the
    other fields change the state in place. ``metadata`` replaces the fact's metadata whole and
    keeps its ``user_id`` (a fact cannot move to another user: add a new one)."""

    content: str | None = None
    category: str | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    metadata: dict[str, Any] | None = None
    evidence: list[ItemEvidence] | None = None
    expires_at: datetime | None = None

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> FactUpdate:
        for name in ("content", "category", "confidence", "metadata", "evidence"):
            if name in self.model_fields_set and getattr(self, name) is None:
                raise ValueError(f"{name} cannot be cleared")
        return self


class Fact(Record):
    """A fact as read: its current state. ``item_id`` is the memory item holding that state
    (the fact's own id for its first state); ``created_at`` is when the fact was added,
    ``updated_at`` when its current state was written or last changed in place."""

    id: str
    agent_id: str
    content: str
    category: str = DEFAULT_CATEGORY
    confidence: float = 1.0
    source: FactOrigin = "user"
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    evidence: list[ItemEvidence] = Field(default_factory=list)
    item_id: str

    @property
    def user_id(self) -> str | None:
        """The user the fact is scoped to (``metadata["user_id"]``), or ``None`` when shared."""
        user = self.metadata.get("user_id")
        return user if isinstance(user, str) else None


def _check_metadata_keys(name: str, value: Mapping[str, Any]) -> None:
    """Name ``metadata.user_id`` and ``metadata.fact`` themselves when they are refused."""
    metadata = value.get("metadata")
    if not isinstance(metadata, Mapping):
        return
    if FACT_KEY in metadata:
        raise InvalidArgumentError(f"{name}.metadata.{FACT_KEY}", "is kept by memory: use another key")
    user = metadata.get("user_id")
    if user is not None:
        tree.check_id(f"{name}.metadata.user_id", user)


def check_new_fact(name: str, value: object) -> NewFact:
    """A :class:`NewFact` from a record or a dict; ``InvalidArgumentError`` naming the field."""
    if isinstance(value, NewFact):
        value = value.model_dump()
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a NewFact or a dict, got {type(value).__name__}")
    _check_metadata_keys(name, value)
    try:
        return NewFact.model_validate(value)
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


def check_fact_update(name: str, value: object) -> FactUpdate:
    """A :class:`FactUpdate` from a record or a dict (fields that cannot change are named)."""
    if isinstance(value, FactUpdate):
        value = value.model_dump(include=value.model_fields_set)
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(name, f"must be a FactUpdate or a dict, got {type(value).__name__}")
    for key in value:
        if key in ("id", "agent_id", "source", "created_at", "updated_at", "item_id"):
            raise InvalidArgumentError(f"{name}.{key}", "cannot be changed")
    _check_metadata_keys(name, value)
    try:
        return FactUpdate.model_validate(value)
    except ValidationError as exc:
        raise tree.validation_error(name, exc) from None


# --- facts and items -----------------------------------------------------------------------


def kind_of_category(category: str) -> ItemKind:
    """The item kind a fact of ``category`` is kept as: the category when it names a kind
    (``preference``, ``instruction``, ``event``, ``opinion``, ``lesson``), else ``fact``."""
    folded = category.strip().casefold()
    for kind in ITEM_KINDS:
        if kind == folded:
            return kind
    return "fact"


def fact_fields(item: MemoryItem) -> dict[str, Any] | None:
    """The fact fields an item keeps (``metadata["fact"]``), or ``None`` when it holds no fact."""
    held = item.metadata.get(FACT_KEY)
    if isinstance(held, dict) and isinstance(held.get("id"), str):
        return held
    return None


def is_fact_item(item: MemoryItem) -> bool:
    """Whether the item holds a state of a fact written through a :class:`FactAdapter`."""
    return fact_fields(item) is not None


def _time(raw: object) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        return clock.to_utc(datetime.fromisoformat(raw))
    except ValueError:
        return None


def fact_of(item: MemoryItem) -> Fact | None:
    """The :class:`Fact` an item holds a state of (``None`` for items of other kinds)."""
    held = fact_fields(item)
    if held is None:
        return None
    source = held.get("source")
    category = held.get("category")
    return Fact(
        id=held["id"],
        agent_id=item.scope.agent_id,
        content=item.value,
        category=category if isinstance(category, str) and category.strip() else DEFAULT_CATEGORY,
        confidence=item.confidence,
        source=source if source in FACT_ORIGINS else "user",
        created_at=_time(held.get("created_at")) or item.recorded_at,
        updated_at=_time(held.get("updated_at")) or item.recorded_at,
        expires_at=item.ends_at,
        metadata={k: v for k, v in item.metadata.items() if k not in _OWN_KEYS},
        evidence=[e.model_copy() for e in item.evidence],
        item_id=item.id,
    )


def _scope_of(agent_id: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    user = metadata.get("user_id")
    return {"agent_id": agent_id, "user_id": user} if isinstance(user, str) else {"agent_id": agent_id}


def _new_state(
    fact_id: str,
    agent_id: str,
    *,
    kind: ItemKind,
    content: str,
    category: str,
    source: FactOrigin,
    confidence: float,
    metadata: Mapping[str, Any],
    evidence: Sequence[ItemEvidence],
    expires_at: datetime | None,
    created_at: datetime | None,
) -> NewMemoryItem:
    held: dict[str, Any] = {"id": fact_id, "category": category, "source": source}
    if created_at is not None:
        held["created_at"] = created_at.isoformat()
    return NewMemoryItem.model_validate(
        {
            "kind": kind,
            "subject": FACT_SUBJECT,
            "attribute": fact_id,
            "value": content,
            "evidence": [e.model_dump() for e in evidence],
            "trust": "system",
            "confidence": confidence,
            "scope": _scope_of(agent_id, metadata),
            "valid_to": expires_at,
            "metadata": {**metadata, FACT_KEY: held},
        }
    )


def _check_category(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(name, f"must be a string, got {type(value).__name__}")
    return value


def _order(facts: list[Fact]) -> list[Fact]:
    """Best first: the most confident, then the most recently updated."""
    facts.sort(key=lambda f: f.id)
    facts.sort(key=lambda f: (f.confidence, f.updated_at), reverse=True)
    return facts


# --- the contract --------------------------------------------------------------------------


@runtime_checkable
class FactAdapter(Protocol):
    """What a store of facts offers (every built-in store that keeps items does). Every call
    returns a :class:`~cogitator_memory.MemoryResult`."""

    async def add_fact(self, fact: NewFact | dict[str, Any]) -> MemoryResult[Fact]:
        """Store a new fact."""
        ...

    async def get_fact(self, fact_id: str) -> MemoryResult[Fact | None]:
        """The fact, or ``None`` when there is none (or it expired)."""
        ...

    async def get_facts(
        self,
        agent_id: str,
        *,
        category: str | None = None,
        user_id: str | None = None,
        all_users: bool = False,
        limit: int = 100,
    ) -> MemoryResult[list[Fact]]:
        """The facts a user of the agent sees, best first."""
        ...

    async def update_fact(self, fact_id: str, updates: FactUpdate | dict[str, Any]) -> MemoryResult[Fact]:
        """Change a fact."""
        ...

    async def delete_fact(self, fact_id: str) -> MemoryResult[None]:
        """Delete a fact with its history."""
        ...

    async def search_facts(
        self,
        agent_id: str,
        query: str,
        *,
        category: str | None = None,
        user_id: str | None = None,
        all_users: bool = False,
        limit: int = 10,
    ) -> MemoryResult[list[Fact]]:
        """The facts whose content matches ``query`` by keywords, best first."""
        ...


def reading_time(adapter: MemoryItemAdapter, agent_id: str) -> datetime:
    """Now, for reading an agent's items in ``adapter``: the clock's time, or the agent's last
    record time in this process when that is later (one agent's records are a millisecond apart,
    so a burst of writes records ahead of the clock; a read right after must see them)."""
    return _fact_items_of(adapter).now_for(agent_id)


def _fact_items_of(adapter: MemoryItemAdapter, first_id: str | None = None) -> FactItems:
    return FactItems(adapter, first_id=first_id)


def is_fact_adapter(value: object) -> bool:
    """Whether ``value`` keeps facts (has the calls of :class:`FactAdapter`)."""
    return isinstance(value, FactAdapter)


class FactStoreMixin:
    """The :class:`FactAdapter` calls, written once over the item calls of the class it is mixed
    into (:class:`~cogitator_memory.items.base.MemoryItemStoreMixin` inherits it; see the module
    docstring for how facts are kept). Writes go through
    :class:`~cogitator_memory.items.MemoryItems`, so they take the agent's lock and lay the
    fact's slot out like any item write."""

    if TYPE_CHECKING:  # provided by the class the mixin goes into

        def _require_connected(self) -> None: ...
        def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]: ...
        async def get_items(self, ids: Sequence[str]) -> MemoryResult[list[MemoryItem]]: ...
        async def query_items(self, filter: Any) -> MemoryResult[list[MemoryItem]]: ...
        async def update_items(self, updates: Sequence[Any]) -> MemoryResult[list[MemoryItem]]: ...
        async def delete_items(self, ids: Sequence[str]) -> MemoryResult[int]: ...

    def _fact_items(self, first_id: str | None = None) -> FactItems:
        return _fact_items_of(cast("MemoryItemAdapter", self), first_id)

    async def _locate(self, fact_id: str) -> tuple[MemoryItem | None, MemoryItem | None]:
        """The fact's first state and the state that holds now (either ``None`` when missing)."""
        found = unwrap(await self.get_items([fact_id]))
        if not found:
            return None, None
        first = found[0]
        held = fact_fields(first)
        if held is None or held["id"] != fact_id:
            return None, None
        states = await self._fact_items().held({"scope": first.scope, "slot": first.slot}, first.scope.agent_id)
        return first, (states[-1] if states else None)

    async def add_fact(self, fact: NewFact | dict[str, Any]) -> MemoryResult[Fact]:
        """Store a fact (a :class:`NewFact` or a dict of its fields) and return it with its new
        ``fact_...`` id. ``metadata["user_id"]`` scopes it to that user; ``expires_at`` ends it."""
        try:
            self._require_connected()
            new = check_new_fact("fact", fact)
            fact_id = new_id("fact_")
            state = _new_state(
                fact_id,
                new.agent_id,
                kind=kind_of_category(new.category),
                content=new.content,
                category=new.category,
                source=new.source,
                confidence=new.confidence,
                metadata=new.metadata,
                evidence=new.evidence,
                expires_at=new.expires_at,
                created_at=None,
            )
            item = await self._fact_items(first_id=fact_id).add(state)
            made = fact_of(item)
            assert made is not None
            return ok(made)
        except Exception as exc:
            return self._fail("add_fact", exc)

    async def get_fact(self, fact_id: str) -> MemoryResult[Fact | None]:
        """The fact as it holds now, or ``None`` when there is no such fact or it expired."""
        try:
            self._require_connected()
            checked = tree.check_id("fact_id", fact_id)
            _, current = await self._locate(checked)
            return ok(fact_of(current) if current is not None else None)
        except Exception as exc:
            return self._fail("get_fact", exc)

    async def _held_facts(self, agent_id: object, category: object, user_id: object, all_users: object) -> list[Fact]:
        agent = tree.check_id("agent_id", agent_id)
        chosen = _check_category("category", category)
        user = tree.check_optional_id("user_id", user_id)
        if not isinstance(all_users, bool):
            raise InvalidArgumentError("all_users", f"must be True or False, got {all_users!r}")
        if all_users and user is not None:
            raise InvalidArgumentError("all_users", "give user_id or all_users=True, not both")
        base: dict[str, Any] = {"subject": FACT_SUBJECT}
        if all_users:
            base["within"] = {"agent_id": agent}
        else:
            base["visible_to"] = {"agent_id": agent, "user_id": user}
        facts = []
        for item in await self._fact_items().held(base, agent):
            made = fact_of(item)
            if made is not None and (chosen is None or made.category == chosen):
                facts.append(made)
        return _order(facts)

    async def get_facts(
        self,
        agent_id: str,
        *,
        category: str | None = None,
        user_id: str | None = None,
        all_users: bool = False,
        limit: int = 100,
    ) -> MemoryResult[list[Fact]]:
        """The facts of ``agent_id`` that hold now, best first (most confident, then most
        recently updated): with ``user_id``, the user's and the shared ones; without, only the
        shared ones; with ``all_users=True``, every fact of the agent. ``category`` narrows;
        ``limit`` keeps the first ``limit`` (0: all)."""
        try:
            self._require_connected()
            size = tree.check_limit("limit", limit)
            facts = await self._held_facts(agent_id, category, user_id, all_users)
            return ok(facts[:size] if size else facts)
        except Exception as exc:
            return self._fail("get_facts", exc)

    async def search_facts(
        self,
        agent_id: str,
        query: str,
        *,
        category: str | None = None,
        user_id: str | None = None,
        all_users: bool = False,
        limit: int = 10,
    ) -> MemoryResult[list[Fact]]:
        """The facts :meth:`get_facts` would return whose content holds a word of ``query``,
        ranked by BM25 over those facts' contents (words as the keyword search of the embedding
        stores reads them: case folded, English stopwords left out), best first. A query with no
        word to search for finds nothing. ``limit`` keeps the first ``limit`` (0: all)."""
        try:
            self._require_connected()
            check_text("query", query)
            size = tree.check_limit("limit", limit)
            facts = await self._held_facts(agent_id, category, user_id, all_users)
            index: BM25Index[str] = BM25Index()
            for n, fact in enumerate(facts):
                index.add(f"{n:09d}", fact.content)  # ties keep get_facts' order
            ranked = index.search(query, limit=size or None)
            return ok([facts[int(key)] for key, _ in ranked])
        except Exception as exc:
            return self._fail("search_facts", exc)

    async def update_fact(self, fact_id: str, updates: FactUpdate | dict[str, Any]) -> MemoryResult[Fact]:
        """Change a fact (see :class:`FactUpdate`) and return it as it holds afterwards. A new
        content is a new state of the fact (:meth:`MemoryItems.add
        <cogitator_memory.items.MemoryItems.add>` closes the old one, which stays in the
        history); the other fields change the current state in place, at the version read. A
        fact that does not hold now (missing, expired, deleted) fails with ``NotFoundError``."""
        try:
            self._require_connected()
            checked = tree.check_id("fact_id", fact_id)
            change = check_fact_update("updates", updates)
            given = change.model_fields_set
            for _ in range(_ROUNDS):
                first, current = await self._locate(checked)
                fact = fact_of(current) if current is not None else None
                if first is None or current is None or fact is None:
                    raise NotFoundError(f"fact {checked} not found (or it no longer holds)")
                metadata = dict(fact.metadata)
                if change.metadata is not None:
                    metadata = dict(change.metadata)
                    if metadata.get("user_id", fact.user_id) != fact.user_id:
                        raise InvalidArgumentError(
                            "updates.metadata.user_id", "cannot change: a fact cannot move to another user"
                        )
                    if fact.user_id is not None:
                        metadata["user_id"] = fact.user_id
                category = change.category if change.category is not None else fact.category
                confidence = change.confidence if change.confidence is not None else fact.confidence
                evidence = change.evidence if change.evidence is not None else fact.evidence
                expires = change.expires_at if "expires_at" in given else fact.expires_at
                if change.content is not None and not rules.same_value(change.content, fact.content):
                    state = _new_state(
                        checked,
                        fact.agent_id,
                        kind=current.kind,
                        content=change.content,
                        category=category,
                        source=fact.source,
                        confidence=confidence,
                        metadata=metadata,
                        evidence=evidence,
                        expires_at=expires,
                        created_at=fact.created_at,
                    )
                    item = await self._fact_items().add(state)
                    made = fact_of(item)
                    assert made is not None
                    return ok(made)
                update = await self._in_place(current, category, confidence, metadata, evidence, expires, fact)
                if update is None:
                    return ok(fact)
                result = await self.update_items([update])
                if (
                    not result.success
                    and result.error_type is not None
                    and issubclass(result.error_type, ConflictError)
                ):
                    await asyncio.sleep(0)
                    continue
                made = fact_of(unwrap(result)[0])
                assert made is not None
                return ok(made)
            raise ConflictError(f"fact {checked} kept changing under this update")
        except Exception as exc:
            return self._fail("update_fact", exc)

    async def _in_place(
        self,
        current: MemoryItem,
        category: str,
        confidence: float,
        metadata: dict[str, Any],
        evidence: Sequence[ItemEvidence],
        expires: datetime | None,
        fact: Fact,
    ) -> ItemUpdate | None:
        """The update of the current state for a change that keeps its content (``None`` when
        nothing changes): its end laid out again with the fact's other states."""
        same = (
            category == fact.category
            and confidence == fact.confidence
            and metadata == fact.metadata
            and list(evidence) == fact.evidence
            and expires == fact.expires_at
        )
        if same:
            return None
        writer = self._fact_items()
        now = writer.now_for(current.scope.agent_id)
        held = dict(fact_fields(current) or {})
        held.update(category=category, updated_at=now.isoformat())
        fields: dict[str, Any] = {
            "id": current.id,
            "expected_version": current.version,
            "metadata": {**metadata, FACT_KEY: held},
        }
        if confidence != current.confidence:
            fields["confidence"] = confidence
        if list(evidence) != current.evidence:
            fields["evidence"] = list(evidence)
        if expires != current.ends_at:
            states = unwrap(
                await self.query_items(
                    {"scope": current.scope, "slot": current.slot, "statuses": sorted(LAID_OUT_STATUSES)}
                )
            )
            moved = current.model_copy(update={"ends_at": expires})
            place = rules.lay_out([moved if s.id == current.id else s for s in states], now)[current.id]
            fields.update(ends_at=expires, valid_to=place.valid_to, status=place.status)
        return ItemUpdate.model_validate(fields)

    async def delete_fact(self, fact_id: str) -> MemoryResult[None]:
        """Delete a fact for good: every state of it, its history included (a missing fact is
        fine). To end a fact and keep its history, update its ``expires_at`` instead."""
        try:
            self._require_connected()
            checked = tree.check_id("fact_id", fact_id)
            found = unwrap(await self.get_items([checked]))
            if not found:
                return ok_none()
            first = found[0]
            held = fact_fields(first)
            if held is None or held["id"] != checked:
                return ok_none()
            states = unwrap(await self.query_items({"scope": first.scope, "slot": first.slot}))
            ids = [s.id for s in states if (fact_fields(s) or {}).get("id") == checked]
            unwrap(await self.delete_items(ids))
            return ok_none()
        except Exception as exc:
            return self._fail("delete_fact", exc)


__all__ = [
    "DEFAULT_CATEGORY",
    "FACT_KEY",
    "FACT_ORIGINS",
    "FACT_SUBJECT",
    "Fact",
    "FactAdapter",
    "FactOrigin",
    "FactStoreMixin",
    "FactUpdate",
    "NewFact",
    "check_fact_update",
    "check_new_fact",
    "fact_fields",
    "fact_of",
    "is_fact_adapter",
    "is_fact_item",
    "kind_of_category",
    "reading_time",
]
