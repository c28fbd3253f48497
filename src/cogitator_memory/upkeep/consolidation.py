"""``MemoryConsolidator``: repeats and contradictions marked stale, lessons folded into the playbook.

:meth:`MemoryConsolidator.dedupe` shows a model the active items of exactly one scope, one
subject (entity) per call, and marks stale (never deletes) the items it finds to repeat or
contradict another. Code checks every group the model answers: a group naming an item the model
was not shown is refused whole; an item is never dropped for a less trusted one; a contradiction
drops only items recorded before the one kept; an item kept in one group is not dropped in
another. An unfinished answer (no JSON array, or one cut before its end) stops the pass before
its subject, so a later pass asks again.

:meth:`MemoryConsolidator.fold_lessons` folds the active lessons the scope sees into the playbook
(:data:`~cogitator_memory.upkeep.playbook.PLAYBOOK_PATH`) through at most three quoted edits (see
:mod:`.playbook`). Lessons from a tool or a web page are never folded; a playbook the whole agent
shares takes only system lessons in apply mode. ``mode="shadow"`` writes the draft
(:data:`~cogitator_memory.upkeep.playbook.PLAYBOOK_DRAFT_PATH`) instead, and
:meth:`MemoryConsolidator.promote_playbook` makes it the playbook after review.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, TypeAlias

from ..clock import to_utc
from ..errors import ConflictError, InvalidArgumentError
from ..files.access import FileAccess, narrowness
from ..files.errors import MemoryFileError
from ..files.records import MemoryFile, MemoryFileVersion
from ..files.service import MemoryFiles
from ..items.base import MemoryItemAdapter, is_memory_item_adapter
from ..items.records import MemoryItem, MemoryScope, check_scope
from ..items.rules import trust_rank
from ..items.service import MemoryItems
from ..models.asking import ask_text, check_summarize
from ..models.json_array import read_json_array
from ..models.records import SummarizeFn, SummarizeOptions, check_max_tokens
from ..result import unwrap
from ..threads.records import ACTIVATED_AT_KEY, Message
from ..threads.tree import check_datetime
from .observations import entity_key
from .playbook import (
    MAX_PLAYBOOK_EDITS,
    MAX_PLAYBOOK_RULES,
    PLAYBOOK_DRAFT_PATH,
    PLAYBOOK_PATH,
    FoldResult,
    Playbook,
    apply_playbook_edits,
    parse_playbook,
    parse_playbook_edits,
    playbook_file,
)
from .prompts import DEDUPE_PROMPT, PLAYBOOK_PROMPT, data_block, json_line, listed

StaleReason: TypeAlias = Literal["duplicate", "contradiction"]
FoldMode: TypeAlias = Literal["apply", "shadow"]

#: How many items one dedupe marks, by default.
DEFAULT_MAX_CHANGES = 10
#: How many subjects one dedupe asks about, by default.
DEFAULT_MAX_SUBJECTS = 10
#: How many lessons one fold takes.
LESSONS_PER_FOLD = 20
#: The most items of one subject shown to the model (the newest).
MAX_SUBJECT_ITEMS = 60
#: The answer length of a dedupe call and of a fold.
DEFAULT_UPKEEP_MAX_TOKENS = 2000
#: Who a lesson may come from to be folded (a tool's or a page's never is).
FOLDABLE_TRUST = frozenset({"system", "user", "model"})


@dataclass(frozen=True)
class StaleMark:
    """One item dedupe marked stale: its id, the id of the item kept instead, and why."""

    item_id: str
    kept_id: str
    reason: StaleReason


@dataclass
class DedupeReport:
    """What one :meth:`MemoryConsolidator.dedupe` did: the items marked ``stale``; ``complete``
    is false when a cap or an unfinished answer stopped it, and ``through`` then says it looked at
    every subject whose newest item was recorded up to then (give it as ``since`` next time).
    ``calls`` counts model calls."""

    stale: list[StaleMark] = field(default_factory=list)
    complete: bool = True
    through: datetime | None = None
    calls: int = 0


def _lesson_time(item: MemoryItem) -> tuple[datetime, str]:
    """When a lesson counts from: when it was activated, else when it was recorded."""
    raw = item.metadata.get(ACTIVATED_AT_KEY)
    if isinstance(raw, str):
        try:
            return to_utc(datetime.fromisoformat(raw)), item.id
        except ValueError:
            pass
    return item.recorded_at, item.id


def _shared(scope: MemoryScope) -> bool:
    return scope.user_id is None and scope.project_id is None and scope.thread_id is None


def check_groups(
    text: str, shown: Mapping[str, MemoryItem], *, dropped: set[str] | None = None, kept: set[str] | None = None
) -> list[StaleMark] | None:
    """The marks of a dedupe answer that pass every check, or ``None`` for an unfinished answer.

    A group is ``{"keep": id, "drop": [ids], "reason": "duplicate" | "contradiction"}``. One that
    names an item not in ``shown`` is refused whole; a dropped item more trusted than the one kept,
    or (for a contradiction) not recorded before it, is left as it is; an item kept is never
    dropped, nor one dropped kept (``dropped`` and ``kept`` carry that across subjects)."""
    read = read_json_array(text, objects=True)
    if not read.found or not read.complete:
        return None
    dropped = set() if dropped is None else dropped
    kept = set() if kept is None else kept
    marks: list[StaleMark] = []
    for group in read.elements:
        keep, drop, reason = group.get("keep"), group.get("drop"), group.get("reason")
        if isinstance(drop, str):
            drop = [drop]
        if reason not in ("duplicate", "contradiction") or not isinstance(keep, str) or not isinstance(drop, list):
            continue
        if not all(isinstance(d, str) for d in drop) or keep not in shown or not set(drop) <= shown.keys():
            continue
        if keep in dropped:
            continue
        winner = shown[keep]
        chosen: list[StaleMark] = []
        for item_id in dict.fromkeys(drop):
            loser = shown[item_id]
            if item_id == keep or item_id in kept or item_id in dropped:
                continue
            if trust_rank(loser.trust) < trust_rank(winner.trust):
                continue  # never dropped for a less trusted item
            if reason == "contradiction" and not loser.recorded_at < winner.recorded_at:
                continue  # a contradiction drops only what was said before
            chosen.append(StaleMark(item_id, keep, reason))
        if chosen:
            kept.add(keep)
            dropped.update(m.item_id for m in chosen)
            marks.extend(chosen)
    return marks


def _item_line(item: MemoryItem) -> str:
    data: dict[str, Any] = {"id": item.id, "kind": item.kind, "trust": item.trust}
    data["recorded"] = item.recorded_at.isoformat(timespec="seconds")
    if item.attribute:
        data["attribute"] = item.attribute
    data["value"] = item.value
    return json_line(data)


class MemoryConsolidator:
    """Looks over one scope's memory between runs (see the module docstring).

    ``items`` is the :class:`~cogitator_memory.items.MemoryItems` service stale marks go
    through, ``item_adapter`` the item store read (``items.adapter`` when left out), ``files``
    the :class:`~cogitator_memory.files.MemoryFiles` service the playbook is kept with.
    """

    def __init__(
        self, *, items: MemoryItems, files: MemoryFiles, item_adapter: MemoryItemAdapter | None = None
    ) -> None:
        if not isinstance(items, MemoryItems):
            raise InvalidArgumentError("items", f"must be a MemoryItems service, got {type(items).__name__}")
        if not isinstance(files, MemoryFiles):
            raise InvalidArgumentError("files", f"must be a MemoryFiles service, got {type(files).__name__}")
        if item_adapter is not None and not is_memory_item_adapter(item_adapter):
            raise InvalidArgumentError("item_adapter", "must keep memory items (a MemoryItemAdapter)")
        self.items = items
        self.files = files
        self.item_adapter = item_adapter or items.adapter

    # ----- dedupe ----------------------------------------------------------------------------

    async def dedupe(
        self,
        scope: MemoryScope | Mapping[str, Any],
        *,
        summarize: SummarizeFn,
        since: datetime | None = None,
        max_changes: int = DEFAULT_MAX_CHANGES,
        max_subjects: int = DEFAULT_MAX_SUBJECTS,
        model: str | None = None,
        max_tokens: int = DEFAULT_UPKEEP_MAX_TOKENS,
    ) -> DedupeReport:
        """Mark stale the active items of exactly ``scope`` that repeat or contradict another,
        one model call per subject of two or more items (see the module docstring).

        ``since`` looks only at subjects with an item recorded after it, those whose newest item
        is oldest first; ``max_subjects`` bounds the subjects asked about and ``max_changes`` the
        items marked. The reason goes into each item's ``metadata["stale_because"]``."""
        checked = check_scope("scope", scope)
        check_summarize(summarize)
        after = check_datetime("since", since)
        changes = _count("max_changes", max_changes)
        subjects = _count("max_subjects", max_subjects)
        options = SummarizeOptions(model=model, prompt=DEDUPE_PROMPT, max_tokens=check_max_tokens(max_tokens))
        items = unwrap(await self.item_adapter.query_items({"scope": checked, "statuses": ["active"]}))
        groups: dict[str, list[MemoryItem]] = {}
        for item in items:
            groups.setdefault(entity_key(item), []).append(item)
        ordered = []
        for members in groups.values():
            newest = max(i.recorded_at for i in members)
            if len(members) >= 2 and (after is None or newest > after):
                ordered.append((newest, members))
        ordered.sort(key=lambda t: (t[0], entity_key(t[1][0])))
        report = DedupeReport()
        dropped: set[str] = set()
        kept: set[str] = set()
        for n, (newest, members) in enumerate(ordered):
            if n >= subjects or len(report.stale) >= changes:
                report.complete = False
                break
            shown = {i.id: i for i in members[-MAX_SUBJECT_ITEMS:]}
            request = data_block("items", "\n".join(_item_line(i) for i in shown.values()))
            subject = f"Subject: {' '.join(members[-1].subject.split())}\n\n"
            report.calls += 1
            answer = await ask_text(summarize, [Message(role="user", content=subject + request)], options)
            marks = check_groups(answer, shown, dropped=dropped, kept=kept)
            if marks is None:
                report.complete = False
                break
            room = changes - len(report.stale)
            if len(marks) > room:
                marks, report.complete = marks[:room], False
            for reason in ("duplicate", "contradiction"):
                for keep in dict.fromkeys(m.kept_id for m in marks if m.reason == reason):
                    ids = [m.item_id for m in marks if m.reason == reason and m.kept_id == keep]
                    because = {"reason": reason, "kept_id": keep, "by": "consolidation"}
                    done = set(await self.items.mark_stale(ids, because, only_from=["active"]))
                    report.stale.extend(m for m in marks if m.item_id in done and m.kept_id == keep)
            if not report.complete:
                break
            report.through = newest
        if report.complete:
            report.through = ordered[-1][0] if ordered else after
        return report

    # ----- the playbook ----------------------------------------------------------------------

    @staticmethod
    def _access(scope: MemoryScope) -> FileAccess:
        return FileAccess(scope=scope, author="memory")

    async def _standing(self, scope: MemoryScope, path: str) -> tuple[MemoryFileVersion | None, str | None]:
        """The newest version of ``path`` memory or a person wrote (model versions skipped; a
        deletion counts as no file), and the SHA-256 of what stands there now (``None``: nothing).

        The head is read before the history: a version written between the two reads is then in
        the history but not the SHA, so a write expecting that SHA is refused. Read the other way
        round, a writer could build on an older version and be given the newer one's SHA."""
        head = await self.files.read(self._access(scope), path)
        history = await self.files.history(self._access(scope), path)
        trusted = [v for v in history if v.author != "model"]
        if not trusted:
            return None, head.sha256 if head is not None else None
        best = max(trusted, key=lambda v: (narrowness(v.scope), v.sequence))
        return (None if best.is_deletion else best), head.sha256 if head is not None else None

    async def read_playbook(self, scope: MemoryScope | Mapping[str, Any]) -> MemoryFile | None:
        """The playbook file the scope's runs read: the newest version of :data:`PLAYBOOK_PATH`
        memory or a person wrote (a model's never), or ``None`` when there is none. Read its
        rules with :func:`~cogitator_memory.upkeep.parse_playbook`."""
        checked = check_scope("scope", scope)
        version, _ = await self._standing(checked, PLAYBOOK_PATH)
        if version is None or version.content is None or version.sha256 is None:
            return None
        return MemoryFile(
            path=version.path, content=version.content, sha256=version.sha256, size=version.size, version=version
        )

    async def fold_lessons(
        self,
        scope: MemoryScope | Mapping[str, Any],
        *,
        summarize: SummarizeFn,
        mode: FoldMode = "apply",
        model: str | None = None,
        max_tokens: int = DEFAULT_UPKEEP_MAX_TOKENS,
    ) -> FoldResult | None:
        """Fold the lessons the playbook has not taken (oldest first, at most
        :data:`LESSONS_PER_FOLD`) into it in at most :data:`MAX_PLAYBOOK_EDITS` edits, one model
        call; ``None`` when there was nothing to fold, the answer was unfinished or the file
        changed while the model answered (the lessons wait for the next fold). ``mode="shadow"`` writes :data:`PLAYBOOK_DRAFT_PATH` instead."""
        checked = check_scope("scope", scope)
        check_summarize(summarize)
        if mode not in ("apply", "shadow"):
            raise InvalidArgumentError("mode", f"must be 'apply' or 'shadow', got {mode!r}")
        options = SummarizeOptions(model=model, prompt=PLAYBOOK_PROMPT, max_tokens=check_max_tokens(max_tokens))
        live, live_sha = await self._standing(checked, PLAYBOOK_PATH)
        base = parse_playbook(live.content) if live is not None and live.content is not None else Playbook()
        path, expected = PLAYBOOK_PATH, live_sha
        if mode == "shadow":
            made_from = live.sha256 if live is not None and live.sha256 is not None else "none"
            draft, draft_sha = await self._standing(checked, PLAYBOOK_DRAFT_PATH)
            drafted = parse_playbook(draft.content) if draft is not None and draft.content is not None else None
            base = drafted if drafted is not None and drafted.draft_of == made_from else base
            base = replace(base, draft_of=made_from)
            path, expected = PLAYBOOK_DRAFT_PATH, draft_sha
        allowed = {"system"} if mode == "apply" and _shared(checked) else FOLDABLE_TRUST
        waiting = set(base.waiting)
        lessons = await self.items.query(checked, statuses=["active"], kinds=["lesson"])
        candidates = sorted(
            (
                i
                for i in lessons
                if i.trust in FOLDABLE_TRUST
                and (base.through is None or _lesson_time(i) > base.through or i.id in waiting)
            ),
            key=_lesson_time,
        )
        fresh = [i for i in candidates if i.trust in allowed][:LESSONS_PER_FOLD]
        if not fresh:
            return None
        answer = await ask_text(summarize, [Message(role="user", content=_fold_request(base, fresh))], options)
        edits = parse_playbook_edits(answer, [i.id for i in fresh], base)
        if edits is None:
            return None
        folded, done = apply_playbook_edits(base, edits)
        taken = {i.id for i in fresh}
        through = max(_lesson_time(fresh[-1]), base.through or _lesson_time(fresh[-1]))
        passed = [i.id for i in candidates if i.id not in taken and _lesson_time(i) <= through]
        folded = replace(folded, through=through, waiting=tuple(dict.fromkeys(passed)))
        try:
            await self.files.put(self._access(checked), path, playbook_file(folded), expected)
        except MemoryFileError:
            now = await self.files.read(self._access(checked), path)
            if (now.sha256 if now is not None else None) == expected:
                raise
            return None  # another writer changed the file while the model answered: the lessons wait
        return FoldResult(path=path, edits=done, lesson_ids=[i.id for i in fresh])

    async def promote_playbook(self, scope: MemoryScope | Mapping[str, Any]) -> MemoryFileVersion:
        """Make the draft (:data:`PLAYBOOK_DRAFT_PATH`) the playbook and delete the draft; returns
        the playbook's new version. Refused (:class:`~cogitator_memory.files.MemoryFileError`) when
        there is no draft, when a model wrote it, or when the playbook changed since the draft was
        made."""
        checked = check_scope("scope", scope)
        access = self._access(checked)
        draft = await self.files.read(access, PLAYBOOK_DRAFT_PATH)
        if draft is None:
            raise MemoryFileError(f"There is no draft at {PLAYBOOK_DRAFT_PATH} to promote.", PLAYBOOK_DRAFT_PATH)
        if draft.version.author == "model":
            raise MemoryFileError(
                f"The draft at {PLAYBOOK_DRAFT_PATH} was written by a model and cannot be promoted.",
                PLAYBOOK_DRAFT_PATH,
            )
        drafted = parse_playbook(draft.content)
        live, live_sha = await self._standing(checked, PLAYBOOK_PATH)
        made_from = live.sha256 if live is not None and live.sha256 is not None else "none"
        if drafted.draft_of != made_from:
            raise MemoryFileError(
                f"The playbook changed since the draft at {PLAYBOOK_DRAFT_PATH} was made; fold again.",
                PLAYBOOK_DRAFT_PATH,
            )
        promoted = replace(drafted, draft_of=None)
        try:
            version = await self.files.put(access, PLAYBOOK_PATH, playbook_file(promoted), live_sha)
        except MemoryFileError as exc:
            raise ConflictError(f"the playbook changed while the draft was promoted: {exc}") from exc
        await self.files.run(
            access, {"command": "delete", "path": PLAYBOOK_DRAFT_PATH, "expected_sha256": draft.sha256}
        )
        return version


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(name, f"must be a positive integer, got {value!r}")
    return value


def _fold_request(playbook: Playbook, lessons: Sequence[MemoryItem]) -> str:
    rules = listed(f"{n}. {rule.text}" for n, rule in enumerate(playbook.rules, 1))
    shown = "\n".join(json_line({"id": i.id, "lesson": i.value, "about": i.subject}) for i in lessons)
    room = len(playbook.rules) < MAX_PLAYBOOK_RULES
    note = "" if room else f"The playbook is full ({MAX_PLAYBOOK_RULES} rules): only rewrite rules.\n\n"
    return (
        f"{note}At most {MAX_PLAYBOOK_EDITS} edits.\n\n"
        + data_block("playbook", rules)
        + "\n\n"
        + data_block("lessons", shown)
    )


__all__ = [
    "DEFAULT_MAX_CHANGES",
    "DEFAULT_MAX_SUBJECTS",
    "DEFAULT_UPKEEP_MAX_TOKENS",
    "FOLDABLE_TRUST",
    "LESSONS_PER_FOLD",
    "MAX_SUBJECT_ITEMS",
    "DedupeReport",
    "FoldMode",
    "MemoryConsolidator",
    "StaleMark",
    "StaleReason",
    "check_groups",
]
