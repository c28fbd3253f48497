"""The rules of memory items, as plain functions without I/O.

:class:`~cogitator_memory.items.service.MemoryItems` applies them over a store; they are public
so that other code (the context builder, consolidation, your own) reads items the same way.

- :func:`same_value`: values of a slot compare by text, spacing aside; case and signs count.
- :func:`lay_out`: the states of a slot ordered by when they start, each closed when the next
  one starts (or at its own end), the last one open; a state that starts later leaves the
  current one in place until it starts.
- :func:`better_source`, :func:`merged_source`: trust first, then verified quotes.
- :func:`activates`: only system, or user with quotes that hold at the activation confidence.
- :func:`holding`: the bitemporal read, which state held at ``as_of`` as memory knew it at ``known_at``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from .records import (
    LAID_OUT_STATUSES,
    TRUST_ORDER,
    ItemEvidence,
    ItemStatus,
    ItemUpdate,
    MemoryItem,
    NewMemoryItem,
    Trust,
    scope_key,
    start_order,
)

#: The confidence a user's item needs, with quotes that hold, to become active on its own.
DEFAULT_ACTIVATION_CONFIDENCE = 0.7
#: What an opinion said again, with quotes that hold, gains.
OPINION_GAIN = 0.1
#: What an opinion loses when a less trusted source contradicts it.
OPINION_LOSS = 0.2

_RANK = {trust: i for i, trust in enumerate(TRUST_ORDER)}


def same_value(a: str, b: str) -> bool:
    """Whether two values of a slot are the same: runs of whitespace compare equal and ends are
    trimmed; case, signs and punctuation count (``"-5"`` is not ``"5"``, ``"Paris"`` not ``"paris"``)."""
    return a.split() == b.split()


def trust_rank(trust: Trust) -> int:
    """0 for the most trusted source (system), larger for less trusted ones."""
    return _RANK[trust]


def more_trusted(a: Trust, b: Trust) -> bool:
    """Whether ``a`` is strictly more trusted than ``b``."""
    return _RANK[a] < _RANK[b]


def least_trusted(trusts: Iterable[Trust]) -> Trust:
    """The least trusted of ``trusts`` (what an item quoting several sources gets)."""
    return max(trusts, key=_RANK.__getitem__)


def better_source(a: tuple[Trust, bool], b: tuple[Trust, bool]) -> tuple[Trust, bool]:
    """Of two ``(trust, verified)`` sources, the better: the more trusted one, and on equal
    trust the one whose quotes hold. On a full tie, ``a``."""
    if _RANK[a[0]] != _RANK[b[0]]:
        return a if _RANK[a[0]] < _RANK[b[0]] else b
    return b if b[1] and not a[1] else a


def activates(
    trust: Trust,
    verified: bool,
    confidence: float,
    has_evidence: bool,
    activation_confidence: float = DEFAULT_ACTIVATION_CONFIDENCE,
) -> bool:
    """Whether an item becomes active on its own: from system, or from user with quotes that
    hold and a confidence of at least ``activation_confidence``. A model, a tool or a page
    never plants an active item."""
    if trust == "system":
        return True
    return trust == "user" and verified and has_evidence and confidence >= activation_confidence


def is_open(item: MemoryItem, at: datetime) -> bool:
    """Whether the state is not closed at ``at`` (no ``valid_to``, or one after ``at``)."""
    return item.valid_to is None or item.valid_to > at


#: The order states of a slot are laid out in: by start, then when recorded, then by id (a
#: query's ``order="start"``).
layout_order = start_order


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the layout puts one state: its status and where it closes."""

    status: ItemStatus
    valid_to: datetime | None


def lay_out(states: Iterable[MemoryItem], now: datetime, *, slotted: bool = True) -> dict[str, Placement]:
    """The layout of one slot's states in one exact scope, at ``now``.

    Only active and superseded items take part (suggested and stale ones are left out of the
    result). Ordered by :func:`layout_order`, each is closed at the start of the next one or at
    its own end (``ends_at``), whichever comes first, and the last one stays open unless it has
    an end of its own (a state let go keeps its place, so the one before stays closed). A state
    closed at or before ``now`` is superseded, the others active: a state set to start later
    leaves the current one active, closed where the later one starts.

    ``slotted=False`` is for items without an attribute, whose values do not replace each other:
    each closes only at its own end.
    """
    laid = sorted((s for s in states if s.status in LAID_OUT_STATUSES), key=layout_order)
    placements: dict[str, Placement] = {}
    for i, state in enumerate(laid):
        end = state.ends_at
        if slotted and i + 1 < len(laid):
            following = laid[i + 1].start
            end = following if end is None or following < end else end
        status: ItemStatus = "superseded" if end is not None and end <= now else "active"
        placements[state.id] = Placement(status, end)
    return placements


def layout_updates(states: Iterable[MemoryItem], now: datetime, *, slotted: bool = True) -> list[ItemUpdate]:
    """The updates that bring stored states to :func:`lay_out`'s placements (none when they are
    there already), each conditioned on the version read."""
    items = list(states)
    by_id = {item.id: item for item in items}
    updates = []
    for item_id, place in lay_out(items, now, slotted=slotted).items():
        item = by_id[item_id]
        if item.status != place.status or item.valid_to != place.valid_to:
            updates.append(
                ItemUpdate(id=item.id, expected_version=item.version, status=place.status, valid_to=place.valid_to)
            )
    return updates


def merge_target(
    existing: Sequence[MemoryItem], new: NewMemoryItem, now: datetime, *, slotted: bool = True
) -> MemoryItem | None:
    """The item ``new`` merges into, or ``None`` when it is a new state.

    ``existing`` are the items of ``new``'s slot in its exact scope. The target is the newest
    open item (active or suggested) of the same value that no state of another value follows
    (in layout order). A ``new`` told with an earlier start that another value's state lies
    before the target's start is a new state (told late), not a merge. Without a slot
    (``slotted=False``: no attribute) values do not follow each other: the newest open item of
    the same value is the target.
    """
    candidates = [
        item
        for item in existing
        if item.status in ("active", "suggested") and is_open(item, now) and same_value(item.value, new.value)
    ]
    if not candidates:
        return None
    target = max(candidates, key=layout_order)
    if not slotted:
        return target
    others = [s for s in existing if s.status in LAID_OUT_STATUSES and not same_value(s.value, new.value)]
    key = layout_order(target)
    if any(layout_order(s) > key for s in others):
        return None
    told_earlier = new.valid_from
    if told_earlier is not None and any(told_earlier <= s.start < target.start for s in others):
        return None
    return target


def merged_evidence(
    kept: Sequence[ItemEvidence], added: Sequence[ItemEvidence], *, take_added: bool
) -> list[ItemEvidence]:
    """``kept`` followed by the pieces of ``added`` it lacks (same entry and quote, spacing
    aside), when ``take_added``; else ``kept``."""
    out = list(kept)
    if not take_added:
        return out
    seen = {(e.entry_id, " ".join(e.quote.split())) for e in out}
    for piece in added:
        key = (piece.entry_id, " ".join(piece.quote.split()))
        if key not in seen:
            seen.add(key)
            out.append(piece)
    return out


def merge_update(
    target: MemoryItem,
    new: NewMemoryItem,
    *,
    activation_confidence: float = DEFAULT_ACTIVATION_CONFIDENCE,
    shadow: bool = False,
) -> ItemUpdate | None:
    """The update that merges ``new`` into ``target`` (``None`` when nothing changes).

    Trust and verified come from the better source (:func:`better_source`); the quotes of
    ``new`` are added unless they would sit under a verified item without holding. A restatement
    whose quotes hold raises the confidence to its own when higher, and an opinion said again with
    quotes that hold gains :data:`OPINION_GAIN`; one whose quotes do not hold leaves it. A suggested target becomes active when the merged item
    :func:`activates` (not in ``shadow`` mode); an active one stays active. A start told earlier
    moves the start back; an end told for an open state becomes its own end.
    """
    trust, verified = better_source((target.trust, target.verified), (new.trust, new.verified))
    evidence = merged_evidence(target.evidence, new.evidence, take_added=new.verified or not verified)
    confidence = target.confidence
    if new.verified and new.evidence:
        if target.kind == "opinion":
            confidence = min(1.0, target.confidence + OPINION_GAIN)
        else:
            confidence = max(target.confidence, new.confidence)
    status = target.status
    if (
        status == "suggested"
        and not shadow
        and activates(trust, verified, confidence, bool(evidence), activation_confidence)
    ):
        status = "active"
    fields: dict[str, object] = {}
    if trust != target.trust:
        fields["trust"] = trust
    if verified != target.verified:
        fields["verified"] = verified
    if evidence != target.evidence:
        fields["evidence"] = evidence
    if confidence != target.confidence:
        fields["confidence"] = round(confidence, 6)
    if status != target.status:
        fields["status"] = status
    if new.valid_from is not None and new.valid_from < target.start:
        fields["valid_from"] = new.valid_from
    if new.valid_to is not None and target.ends_at is None and target.valid_to is None:
        fields["ends_at"] = new.valid_to
    if new.related_entity_ids:
        related = list(dict.fromkeys([*(target.related_entity_ids or []), *new.related_entity_ids]))
        if related != (target.related_entity_ids or []):
            fields["related_entity_ids"] = related
    if not fields:
        return None
    return ItemUpdate.model_validate({"id": target.id, "expected_version": target.version, **fields})


def contradicted_opinions(existing: Sequence[MemoryItem], new: NewMemoryItem, now: datetime) -> list[ItemUpdate]:
    """The confidence losses of the open active opinions of the slot that ``new`` (a new state
    of another value) contradicts while coming from a less trusted source."""
    updates = []
    for item in existing:
        if (
            item.kind == "opinion"
            and item.status == "active"
            and is_open(item, now)
            and not same_value(item.value, new.value)
            and more_trusted(item.trust, new.trust)
        ):
            lowered = round(max(0.0, item.confidence - OPINION_LOSS), 6)
            if lowered != item.confidence:
                updates.append(ItemUpdate(id=item.id, expected_version=item.version, confidence=lowered))
    return updates


def known_at(item: MemoryItem, at: datetime) -> bool:
    """Whether memory held ``item`` at ``at``: recorded by then, not expired by then, and (for an
    item made active by review) activated by then."""
    if item.recorded_at > at or (item.expired_at is not None and item.expired_at <= at):
        return False
    activated = item.activated_at
    return activated is None or activated <= at


def _open_at(end: datetime | None, at: datetime) -> bool:
    return end is None or end > at


def holds_at(item: MemoryItem, as_of: datetime) -> bool:
    """Whether the state held in the world at ``as_of`` (``start <= as_of < valid_to``)."""
    return item.start <= as_of and (item.valid_to is None or item.valid_to > as_of)


def holding(
    items: Iterable[MemoryItem],
    *,
    as_of: datetime,
    known_at_time: datetime,
    relayout: bool,
) -> list[MemoryItem]:
    """The active and superseded items that held at ``as_of`` as memory knew them at ``known_at_time``.

    With ``relayout`` (memory's knowledge in the past), each slot of each exact scope is laid
    out again from the items known then, so a close recorded later does not count; else the
    stored layout is read. Either way, when one slot of one scope has several states holding at
    once (a layout a failed write left behind), the one that starts last is kept. Items keep
    their stored fields (``valid_to`` included); the order is :func:`layout_order`.
    """
    known = [i for i in items if i.status in LAID_OUT_STATUSES and known_at(i, known_at_time)]
    groups: dict[tuple[str, str], list[MemoryItem]] = defaultdict(list)
    for item in known:
        groups[(scope_key(item.scope), item.slot_key)].append(item)
    out: list[MemoryItem] = []
    for group in groups.values():
        slotted = group[0].attribute is not None
        if relayout:
            places = lay_out(group, known_at_time, slotted=slotted)
            held = [i for i in group if i.start <= as_of and _open_at(places[i.id].valid_to, as_of)]
        else:
            held = [i for i in group if holds_at(i, as_of)]
        if slotted and len(held) > 1:
            held = [max(held, key=layout_order)]
        out.extend(held)
    out.sort(key=layout_order)
    return out


__all__ = [
    "DEFAULT_ACTIVATION_CONFIDENCE",
    "OPINION_GAIN",
    "OPINION_LOSS",
    "Placement",
    "activates",
    "better_source",
    "contradicted_opinions",
    "holding",
    "holds_at",
    "is_open",
    "known_at",
    "lay_out",
    "layout_order",
    "layout_updates",
    "least_trusted",
    "merge_target",
    "merge_update",
    "merged_evidence",
    "more_trusted",
    "same_value",
    "trust_rank",
]
