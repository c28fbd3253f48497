"""The playbook file and its edits, without I/O.

The playbook (:data:`PLAYBOOK_PATH`) is a memory file of short rules every run of an agent reads.
Each rule is one line ``- <text> [lesson:<id>] ...`` naming the lessons it comes from; a header
line keeps how far lessons were folded (``<!-- folded-through: <time> <id> -->``) and, in a
draft, the SHA-256 of the playbook the draft was made from (``<!-- draft-of: <sha256|none> -->``).

A model changes the playbook only through edits (:class:`PlaybookEdit`): adding a rule, or
rewriting one rule it quotes exactly. :func:`parse_playbook_edits` keeps the edits that hold
(lessons that were shown, a quote of a rule that stands, a rule of one line of at most
:data:`MAX_RULE_CHARS` characters), at most :data:`MAX_PLAYBOOK_EDITS`;
:func:`apply_playbook_edits` applies them, adding rules only while the playbook holds fewer than
:data:`MAX_PLAYBOOK_RULES`. So the playbook is never written over whole.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, TypeAlias

from ..clock import to_utc
from ..errors import InvalidArgumentError
from ..files.paths import PLAYBOOK_DRAFT_PATH, PLAYBOOK_PATH
from ..models.json_array import read_json_array

#: The most edits one fold applies.
MAX_PLAYBOOK_EDITS = 3
#: The most rules a playbook holds; past it lessons only rewrite rules.
MAX_PLAYBOOK_RULES = 60
#: The longest rule, in characters (its lesson marks not counted).
MAX_RULE_CHARS = 300

PLAYBOOK_TITLE = "# Playbook"
_THROUGH = re.compile(r"^<!-- folded-through: (\S+) (\S+) -->$")
_DRAFT_OF = re.compile(r"^<!-- draft-of: (\S+) -->$")
_WAITING = re.compile(r"^<!-- waiting: ([A-Za-z0-9_\- ]*) -->$")
#: The most lessons a playbook keeps waiting for a review.
MAX_WAITING = 500
_LESSON = re.compile(r"\s*\[lesson:([A-Za-z0-9_\-]+)\]")
_ID = re.compile(r"^[A-Za-z0-9_\-]{1,200}$")

EditOp: TypeAlias = Literal["add", "rewrite"]


@dataclass(frozen=True)
class PlaybookRule:
    """One rule: its text and the ids of the lessons it comes from."""

    text: str
    lesson_ids: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        """The rule as the file holds it."""
        marks = "".join(f" [lesson:{i}]" for i in self.lesson_ids)
        return f"- {self.text}{marks}"


@dataclass(frozen=True)
class Playbook:
    """A playbook as read from its file: the rules, how far lessons were folded (the time and id
    of the last lesson folded), for a draft the SHA-256 of the playbook it was made from
    (``"none"`` when there was none; ``None`` in the playbook itself), and the ids of lessons
    passed over because this mode may not fold them (``waiting`` for a draft to take them)."""

    rules: tuple[PlaybookRule, ...] = ()
    through: tuple[datetime, str] | None = None
    draft_of: str | None = None
    waiting: tuple[str, ...] = ()

    @property
    def lesson_ids(self) -> frozenset[str]:
        """Every lesson a rule names."""
        return frozenset(i for rule in self.rules for i in rule.lesson_ids)


@dataclass(frozen=True)
class PlaybookEdit:
    """One edit of the playbook: ``add`` a rule, or ``rewrite`` the rule whose text is ``quote``.
    ``lesson_ids`` are the lessons it comes from."""

    op: EditOp
    rule: str
    lesson_ids: tuple[str, ...]
    quote: str | None = None


@dataclass(frozen=True)
class FoldResult:
    """What one fold did: the file written (the playbook, or its draft in shadow mode), the edits
    applied and the ids of the lessons the fold took."""

    path: str
    edits: list[PlaybookEdit] = field(default_factory=list)
    lesson_ids: list[str] = field(default_factory=list)


def _squash(text: str) -> str:
    return " ".join(text.split())


def parse_playbook(text: str) -> Playbook:
    """A :class:`Playbook` from a file's text. Lines that are not rules or header lines (a title,
    notes a person added) are left out of the rules; a rule's ``[lesson:<id>]`` marks at its end
    are its lessons."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    rules: list[PlaybookRule] = []
    through: tuple[datetime, str] | None = None
    draft_of: str | None = None
    waiting: tuple[str, ...] = ()
    for raw in text.splitlines():
        line = raw.strip()
        match = _WAITING.match(line)
        if match:
            waiting = tuple(dict.fromkeys(match.group(1).split()))
            continue
        match = _THROUGH.match(line)
        if match:
            try:
                through = (to_utc(datetime.fromisoformat(match.group(1))), match.group(2))
            except ValueError:
                through = None
            continue
        match = _DRAFT_OF.match(line)
        if match:
            draft_of = match.group(1)
            continue
        if not line.startswith("- "):
            continue
        body = line[2:]
        ids: list[str] = []
        while True:
            found = list(_LESSON.finditer(body))
            if not found or found[-1].end() != len(body):
                break
            ids.insert(0, found[-1].group(1))
            body = body[: found[-1].start()]
        body = body.strip()
        if body:
            rules.append(PlaybookRule(body, tuple(dict.fromkeys(ids))))
    return Playbook(tuple(rules), through, draft_of, waiting)


def playbook_file(playbook: Playbook) -> str:
    """The text of a playbook's file (what :func:`parse_playbook` reads back)."""
    if not isinstance(playbook, Playbook):
        raise InvalidArgumentError("playbook", f"must be a Playbook, got {type(playbook).__name__}")
    lines = [PLAYBOOK_TITLE]
    if playbook.draft_of is not None:
        lines.append(f"<!-- draft-of: {playbook.draft_of} -->")
    if playbook.through is not None:
        at, lesson = playbook.through
        lines.append(f"<!-- folded-through: {at.isoformat()} {lesson} -->")
    if playbook.waiting:
        lines.append(f"<!-- waiting: {' '.join(playbook.waiting[-MAX_WAITING:])} -->")
    lines.append("")
    lines.extend(rule.line for rule in playbook.rules)
    return "\n".join(lines) + "\n"


def _ids(value: object) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return None
    out: list[str] = []
    for raw in value:
        if not isinstance(raw, str):
            return None
        text = raw.strip().removeprefix("lesson:").removeprefix("item:")
        if not _ID.match(text):
            return None
        out.append(text)
    return tuple(dict.fromkeys(out))


def _rule_text(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    text = _squash(_LESSON.sub("", value))
    text = text.removeprefix("- ").strip()
    if not text or len(text) > MAX_RULE_CHARS or not text.isprintable():
        return None
    return text


def parse_playbook_edits(
    text: str, lesson_ids: Collection[str], playbook: Playbook | None = None, *, max_edits: int = MAX_PLAYBOOK_EDITS
) -> list[PlaybookEdit] | None:
    """The edits of a model's answer that hold, or ``None`` when the answer is unfinished (no JSON
    array, or one cut before its end): such an answer folds nothing.

    An edit holds when its op is ``add`` or ``rewrite``, its rule is one line of text of at most
    :data:`MAX_RULE_CHARS` characters (lesson marks aside), it names at least one lesson and only
    lessons of ``lesson_ids`` (the lessons the model was shown), and a rewrite quotes exactly (spacing
    aside) a rule of ``playbook`` no earlier edit rewrote. Edits that do not hold are left out;
    the first ``max_edits`` that hold are kept.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    allowed = frozenset(lesson_ids)
    read = read_json_array(text, objects=True)
    if not read.found or not read.complete:
        return None
    standing = {_squash(rule.text) for rule in (playbook.rules if playbook is not None else ())}
    rewritten: set[str] = set()
    added: set[str] = set()
    out: list[PlaybookEdit] = []
    for element in read.elements:
        if len(out) >= max_edits:
            break
        edit = _edit(element, allowed, standing, rewritten, added)
        if edit is not None:
            out.append(edit)
    return out


def _edit(
    element: Mapping[str, Any], allowed: frozenset[str], standing: set[str], rewritten: set[str], added: set[str]
) -> PlaybookEdit | None:
    op = element.get("op")
    rule = _rule_text(element.get("rule"))
    lessons = _ids(element.get("lessons"))
    if rule is None or not lessons or not set(lessons) <= allowed:
        return None
    if op == "add":
        key = _squash(rule).casefold()
        if key in added or any(_squash(s).casefold() == key for s in standing):
            return None
        added.add(key)
        return PlaybookEdit("add", rule, lessons)
    if op == "rewrite":
        quote = element.get("quote")
        if not isinstance(quote, str):
            return None
        quoted = _squash(_LESSON.sub("", quote)).removeprefix("- ").strip()
        if quoted not in standing or quoted in rewritten:
            return None
        rewritten.add(quoted)
        return PlaybookEdit("rewrite", rule, lessons, quote=quoted)
    return None


def apply_playbook_edits(
    playbook: Playbook, edits: Sequence[PlaybookEdit], *, max_rules: int = MAX_PLAYBOOK_RULES
) -> tuple[Playbook, list[PlaybookEdit]]:
    """The playbook with ``edits`` applied in order, and the edits that were: a rewrite replaces
    the rule it quotes (its lessons joined to the rule's), an add appends a rule while the
    playbook holds fewer than ``max_rules``. An edit that no longer fits is left out."""
    if not isinstance(playbook, Playbook):
        raise InvalidArgumentError("playbook", f"must be a Playbook, got {type(playbook).__name__}")
    rules = list(playbook.rules)
    done: list[PlaybookEdit] = []
    for edit in edits:
        if not isinstance(edit, PlaybookEdit):
            raise InvalidArgumentError("edits", f"must be PlaybookEdit records, got {type(edit).__name__}")
        if edit.op == "rewrite":
            at = next((n for n, r in enumerate(rules) if _squash(r.text) == edit.quote), None)
            if at is None:
                continue
            ids = tuple(dict.fromkeys((*rules[at].lesson_ids, *edit.lesson_ids)))
            rules[at] = PlaybookRule(edit.rule, ids)
        else:
            if len(rules) >= max_rules:
                continue
            rules.append(PlaybookRule(edit.rule, edit.lesson_ids))
        done.append(edit)
    return replace(playbook, rules=tuple(rules)), done


__all__ = [
    "MAX_PLAYBOOK_EDITS",
    "MAX_PLAYBOOK_RULES",
    "MAX_RULE_CHARS",
    "MAX_WAITING",
    "PLAYBOOK_DRAFT_PATH",
    "PLAYBOOK_PATH",
    "EditOp",
    "FoldResult",
    "Playbook",
    "PlaybookEdit",
    "PlaybookRule",
    "apply_playbook_edits",
    "parse_playbook",
    "parse_playbook_edits",
]
