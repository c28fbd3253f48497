"""``MemoryObservations``: what a model makes of the facts memory holds about each entity, kept as memory files.

An *entity* is what memory items are about: the entity a subject is linked to (``e:<id>``), else
the subject's words (``s:<subject>``), the same keys recall uses. For each entity with at least
``min_items`` facts that hold now (lessons left out), :meth:`MemoryObservations.refresh` asks a
model for statements about it and writes them to a memory file under
:data:`OBSERVATIONS_DIRECTORY`, each statement ending with the items it stands on as
``[item:<id>]``. A statement naming an item the model was not given is dropped, and an answer
with no statement left, or an unfinished one (no JSON array, or one cut before its end), writes
nothing.

The file keeps a fingerprint of the ids of the items it was written from, so a refresh asks
again only about the entities whose facts changed (a fact added, closed or marked stale): one
new item costs one model call. Entities whose answer gave no observation are not asked again in
this process until their facts change. An observation whose entity fell below ``min_items`` is
deleted. A file another writer changed while the model answered is left to it (the entity is
asked again next time). Files are written with author ``memory``; a version a model wrote is never read as an
observation (:func:`parse_observation` returns ``None`` for it).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError
from ..files.access import FileAccess
from ..files.errors import MemoryFileError
from ..files.paths import OBSERVATIONS_DIRECTORY, is_under
from ..files.records import MemoryFile
from ..files.service import MemoryFiles
from ..items.base import MemoryItemAdapter, is_memory_item_adapter
from ..items.records import MemoryItem, MemoryScope, check_scope, scope_key
from ..items.service import MemoryItems
from ..models.asking import ask_text, check_summarize
from ..models.json_array import read_json_array
from ..models.records import SummarizeFn, SummarizeOptions, check_max_tokens
from ..threads.records import Message
from .prompts import OBSERVATION_PROMPT, data_block, json_line

#: How many entities one refresh asks about, by default.
DEFAULT_MAX_ENTITIES = 3
#: How many facts that hold an entity needs to have an observation, by default.
DEFAULT_MIN_ITEMS = 3
#: How many observations a turn gets.
MAX_TURN_OBSERVATIONS = 3
#: The most facts of one entity shown to the model (the newest).
MAX_FACTS_SHOWN = 100
#: The most statements an observation keeps.
MAX_STATEMENTS = 12
#: The longest statement, in characters.
MAX_STATEMENT_CHARS = 500
#: The answer length a refresh asks for, per entity.
DEFAULT_OBSERVATION_MAX_TOKENS = 1500

_ITEM_MARK = re.compile(r"\s*\[item:([A-Za-z0-9_\-]{1,200})\]")
_HEADER = re.compile(r"^<!-- (entity|aliases|based-on): (.*) -->$")
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass
class Entity:
    """An entity as memory items describe it: its key, its name (the subject of its newest fact),
    its other names (the other subjects used for it) and its facts, oldest first."""

    key: str
    name: str
    aliases: list[str]
    items: list[MemoryItem]

    @property
    def newest(self) -> Any:
        """When its newest fact was recorded."""
        return max(i.recorded_at for i in self.items)


@dataclass(frozen=True)
class Observation:
    """One observation as read from its file: the ``entity_id`` (entity key), its ``name`` and
    ``aliases``, the file's ``path``, the statements as ``text`` (one ``- `` line each, with their
    ``[item:<id>]`` marks), the ``item_ids`` they name, the fingerprint ``based_on`` and the ``file``."""

    entity_id: str
    name: str
    aliases: tuple[str, ...]
    path: str
    text: str
    item_ids: tuple[str, ...]
    based_on: str
    file: MemoryFile

    @property
    def context_text(self) -> str:
        """The observation as a turn's context shows it: the entity's names and the statements,
        item marks left out."""
        head = self.name if not self.aliases else f"{self.name} (also: {', '.join(self.aliases)})"
        lines = [_ITEM_MARK.sub("", line).rstrip() for line in self.text.splitlines() if line.strip()]
        return f"About {head}:\n" + "\n".join(lines)


@dataclass
class RefreshReport:
    """What one :meth:`MemoryObservations.refresh` did: the paths ``written`` and ``deleted``,
    the model ``calls``, the entities whose answer was unfinished (nothing written, asked again
    next time) and those whose answer held no statement that stands (``barren``)."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    calls: int = 0
    unfinished: list[str] = field(default_factory=list)
    barren: list[str] = field(default_factory=list)


def entity_key(item: MemoryItem) -> str:
    """The key of the entity an item is about (see the module docstring)."""
    return item.subject_key


def entities_of(items: Iterable[MemoryItem]) -> dict[str, Entity]:
    """The entities ``items`` are about, each with its facts (lessons left out), oldest first."""
    folded: dict[str, tuple[str, str]] = {}  # subject -> (its key text, its words)
    groups: dict[str, list[MemoryItem]] = {}
    for item in items:
        if item.kind == "lesson":
            continue
        subject = item.subject
        known = folded.get(subject)
        if known is None:
            words = " ".join(subject.split())
            known = folded[subject] = (words.casefold(), words)
        key = f"e:{item.entity_id}" if item.entity_id else f"s:{known[0]}"
        members = groups.get(key)
        if members is None:
            groups[key] = [item]
        else:
            members.append(item)
    out: dict[str, Entity] = {}
    for key, members in groups.items():
        members.sort(key=lambda i: (i.recorded_at, i.id))
        names: dict[str, tuple[int, str]] = {}
        for n, item in enumerate(members):
            text, words = folded[item.subject]
            names[text] = (n, words)
        ordered = sorted(names.values(), reverse=True)
        out[key] = Entity(key, ordered[0][1], [name for _, name in ordered[1:]], members)
    return out


def fingerprint(item_ids: Iterable[str]) -> str:
    """The fingerprint of a set of item ids (order aside): 32 hex digits of their SHA-256."""
    return hashlib.sha256("\n".join(sorted(set(item_ids))).encode()).hexdigest()[:32]


def observation_path(key: str) -> str:
    """The path of an entity's observation: a readable name and a hash of the key."""
    name = key[2:] if key[:2] in ("e:", "s:") else key
    slug = _SLUG.sub("-", name.casefold()).strip("-")[:60] or "entity"
    return f"{OBSERVATIONS_DIRECTORY}/{slug}-{hashlib.sha256(key.encode()).hexdigest()[:8]}.md"


def _header_value(value: object) -> str:
    return json.dumps(value, ensure_ascii=False).replace(">", "\\u003e")


def observation_file(entity: Entity, statements: Sequence[tuple[str, Sequence[str]]], based_on: str) -> str:
    """The text of an entity's observation file."""
    lines = [
        f"# {' '.join(entity.name.split())}",
        f"<!-- entity: {_header_value(entity.key)} -->",
        f"<!-- aliases: {_header_value(entity.aliases)} -->",
        f"<!-- based-on: {based_on} -->",
        "",
    ]
    for text, ids in statements:
        lines.append(f"- {text}" + "".join(f" [item:{i}]" for i in ids))
    return "\n".join(lines) + "\n"


def parse_observation(file: MemoryFile) -> Observation | None:
    """The observation a memory file holds, or ``None``: a file outside
    :data:`OBSERVATIONS_DIRECTORY`, one without its header, or a version a model wrote."""
    if not isinstance(file, MemoryFile):
        raise InvalidArgumentError("file", f"must be a MemoryFile, got {type(file).__name__}")
    if file.version.author == "model" or not is_under(file.path, OBSERVATIONS_DIRECTORY):
        return None
    header: dict[str, Any] = {}
    name: str | None = None
    statements: list[str] = []
    ids: list[str] = []
    for raw in file.content.splitlines():
        line = raw.strip()
        if line.startswith("# ") and name is None:
            name = line[2:].strip()
            continue
        match = _HEADER.match(line)
        if match:
            try:
                header[match.group(1)] = match.group(2) if match.group(1) == "based-on" else json.loads(match.group(2))
            except ValueError:
                return None
            continue
        if line.startswith("- "):
            marks = _ITEM_MARK.findall(line)
            if marks:
                statements.append(line)
                ids.extend(marks)
    key, aliases, based_on = header.get("entity"), header.get("aliases", []), header.get("based-on")
    if not isinstance(key, str) or not isinstance(based_on, str) or not name:
        return None
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        return None
    return Observation(
        entity_id=key,
        name=name,
        aliases=tuple(aliases),
        path=file.path,
        text="\n".join(statements),
        item_ids=tuple(dict.fromkeys(ids)),
        based_on=based_on,
        file=file,
    )


def parse_statements(text: str, shown: Collection[str]) -> list[tuple[str, tuple[str, ...]]] | None:
    """The statements of a model's answer that stand, or ``None`` when the answer is unfinished
    (no JSON array, or one cut before its end).

    A statement stands when it is text (at most :data:`MAX_STATEMENT_CHARS` characters) and the
    items it names (its ``items`` and any ``[item:<id>]`` marks in its text) are at least one and
    all among ``shown``. At most :data:`MAX_STATEMENTS` are kept."""
    read = read_json_array(text, objects=True)
    if not read.found or not read.complete:
        return None
    allowed = frozenset(shown)
    out: list[tuple[str, tuple[str, ...]]] = []
    seen: set[str] = set()
    for element in read.elements:
        if len(out) >= MAX_STATEMENTS:
            break
        body, named = element.get("statement", element.get("text")), element.get("items", [])
        if not isinstance(body, str):
            continue
        if isinstance(named, str):
            named = [named]
        if not isinstance(named, list) or not all(isinstance(i, str) for i in named):
            continue
        ids = [i.strip().removeprefix("item:") for i in named] + _ITEM_MARK.findall(body)
        clean = " ".join(_ITEM_MARK.sub("", body).split())
        if not clean or len(clean) > MAX_STATEMENT_CHARS or not clean.isprintable() or not ids:
            continue
        if not set(ids) <= allowed or clean.casefold() in seen:
            continue
        seen.add(clean.casefold())
        out.append((clean, tuple(dict.fromkeys(ids))))
    return out


def _names_pattern(names: Iterable[str]) -> re.Pattern[str] | None:
    phrases = sorted({" ".join(n.split()).casefold() for n in names if n.strip()}, key=len, reverse=True)
    if not phrases:
        return None
    body = "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in phrases)
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)")


def select_observations(
    observations: Sequence[Observation],
    text: str,
    recalled_item_ids: Collection[str] = (),
    *,
    limit: int = MAX_TURN_OBSERVATIONS,
) -> list[Observation]:
    """The observations a turn whose input is ``text`` gets: those whose entity the input names
    (its name or another name, as words of their own, case aside), in the order the input names
    them, then those naming an item the turn recalled; at most ``limit``."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    folded = text.casefold()
    named: list[tuple[int, int, Observation]] = []
    for n, obs in enumerate(observations):
        pattern = _names_pattern([obs.name, *obs.aliases])
        found = pattern.search(folded) if pattern is not None else None
        if found is not None:
            named.append((found.start(), n, obs))
    named.sort(key=lambda t: (t[0], t[1]))
    chosen = [obs for _, _, obs in named]
    recalled = frozenset(recalled_item_ids)
    if recalled:
        chosen.extend(o for o in observations if o not in chosen and recalled.intersection(o.item_ids))
    return chosen[: max(0, limit)]


def _check_count(name: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidArgumentError(name, f"must be an integer of at least {least}, got {value!r}")
    return value


def _fact_line(item: MemoryItem) -> str:
    data: dict[str, Any] = {"id": item.id, "kind": item.kind, "subject": item.subject}
    if item.attribute:
        data["attribute"] = item.attribute
    data["value"] = item.value
    data["since"] = item.start.date().isoformat()
    return json_line(data)


class MemoryObservations:
    """Keeps an observation file per entity memory items are about (see the module docstring).

    ``files`` is the :class:`~cogitator_memory.files.MemoryFiles` service the files are kept
    with, ``items`` the :class:`~cogitator_memory.items.MemoryItems` service the facts are read
    through, and ``item_adapter`` the item store (``items.adapter`` when left out).
    """

    def __init__(
        self, *, files: MemoryFiles, items: MemoryItems, item_adapter: MemoryItemAdapter | None = None
    ) -> None:
        if not isinstance(files, MemoryFiles):
            raise InvalidArgumentError("files", f"must be a MemoryFiles service, got {type(files).__name__}")
        if not isinstance(items, MemoryItems):
            raise InvalidArgumentError("items", f"must be a MemoryItems service, got {type(items).__name__}")
        if item_adapter is not None and not is_memory_item_adapter(item_adapter):
            raise InvalidArgumentError("item_adapter", "must keep memory items (a MemoryItemAdapter)")
        self.files = files
        self.items = items
        self.item_adapter = item_adapter or items.adapter
        #: (scope key, entity key) -> the fingerprint whose answer gave no observation.
        self._barren: dict[tuple[str, str], str] = {}

    @staticmethod
    def _access(scope: MemoryScope) -> FileAccess:
        return FileAccess(scope=scope, author="memory")

    async def _files(self, scope: MemoryScope) -> list[MemoryFile]:
        return await self.files.list(self._access(scope), OBSERVATIONS_DIRECTORY)

    async def read(self, scope: MemoryScope | Mapping[str, Any]) -> list[Observation]:
        """The observations the scope sees, by path (versions a model wrote left out)."""
        checked = check_scope("scope", scope)
        found = (parse_observation(f) for f in await self._files(checked))
        return [o for o in found if o is not None]

    def select(
        self, observations: Sequence[Observation], text: str, recalled_item_ids: Collection[str] = ()
    ) -> list[Observation]:
        """See :func:`select_observations` (what a context builder calls)."""
        return select_observations(observations, text, recalled_item_ids)

    async def for_turn(
        self, scope: MemoryScope | Mapping[str, Any], text: str, recalled_item_ids: Collection[str] = ()
    ) -> list[Observation]:
        """The observations a turn of ``scope`` whose input is ``text`` gets (at most three)."""
        return select_observations(await self.read(scope), text, recalled_item_ids)

    async def refresh(
        self,
        scope: MemoryScope | Mapping[str, Any],
        *,
        summarize: SummarizeFn,
        max_entities: int = DEFAULT_MAX_ENTITIES,
        min_items: int = DEFAULT_MIN_ITEMS,
        model: str | None = None,
        max_tokens: int = DEFAULT_OBSERVATION_MAX_TOKENS,
    ) -> RefreshReport:
        """Write again the observations of ``scope`` whose facts changed, the entities with the
        newest facts first and at most ``max_entities`` of them (one model call each), and delete
        those of the scope whose entity has fewer than ``min_items`` facts that hold."""
        checked = check_scope("scope", scope)
        check_summarize(summarize)
        most = _check_count("max_entities", max_entities, 0)
        least = _check_count("min_items", min_items, 1)
        options = SummarizeOptions(model=model, prompt=OBSERVATION_PROMPT, max_tokens=check_max_tokens(max_tokens))
        facts = await self.items.query(checked)
        entities = {k: e for k, e in entities_of(facts).items() if len(e.items) >= least}
        files = await self._files(checked)
        standing: dict[str, Observation] = {}
        for file in files:
            obs = parse_observation(file)
            if obs is not None:
                standing.setdefault(obs.entity_id, obs)
        report = RefreshReport()
        own = scope_key(checked)
        for obs in standing.values():
            if obs.entity_id not in entities and scope_key(obs.file.version.scope) == own:
                command = {"command": "delete", "path": obs.path, "expected_sha256": obs.file.sha256}
                if await self._raced(
                    checked, obs.path, obs.file.sha256, self.files.run(self._access(checked), command)
                ):
                    continue
                report.deleted.append(obs.path)
        due: list[tuple[Entity, list[MemoryItem], str]] = []
        for key, entity in entities.items():
            shown = entity.items[-MAX_FACTS_SHOWN:]
            mark = fingerprint(i.id for i in shown)
            current = standing.get(key)
            if (current is not None and current.based_on == mark) or self._barren.get((own, key)) == mark:
                continue
            due.append((entity, shown, mark))
        due.sort(key=lambda t: (t[0].newest, t[0].key), reverse=True)
        shas = {f.path: f.sha256 for f in files}
        for entity, shown, mark in due[:most]:
            report.calls += 1
            answer = await ask_text(summarize, [Message(role="user", content=self._request(entity, shown))], options)
            statements = parse_statements(answer, [i.id for i in shown])
            if statements is None:
                report.unfinished.append(entity.key)
                continue
            if not statements:
                self._barren[(own, entity.key)] = mark
                report.barren.append(entity.key)
                continue
            current = standing.get(entity.key)
            path = current.path if current is not None else observation_path(entity.key)
            text = observation_file(entity, statements, mark)
            if await self._raced(
                checked, path, shas.get(path), self.files.put(self._access(checked), path, text, shas.get(path))
            ):
                report.unfinished.append(entity.key)
                continue
            self._barren.pop((own, entity.key), None)
            report.written.append(path)
        return report

    async def _raced(self, scope: MemoryScope, path: str, read: str | None, change: Awaitable[object]) -> bool:
        """Make ``change`` of ``path``; ``True`` when it was refused because another writer changed
        the file since it was read (``read``: its SHA-256 then), which the next refresh sees."""
        try:
            await change
        except MemoryFileError:
            now = await self.files.read(self._access(scope), path)
            if (now.sha256 if now is not None else None) == read:
                raise
            return True
        return False

    @staticmethod
    def _request(entity: Entity, shown: Sequence[MemoryItem]) -> str:
        names = f"Entity: {entity.name}"
        if entity.aliases:
            names += f" (also called: {', '.join(entity.aliases)})"
        return names + "\n\n" + data_block("facts", "\n".join(_fact_line(i) for i in shown))


__all__ = [
    "DEFAULT_MAX_ENTITIES",
    "DEFAULT_MIN_ITEMS",
    "DEFAULT_OBSERVATION_MAX_TOKENS",
    "MAX_FACTS_SHOWN",
    "MAX_STATEMENTS",
    "MAX_STATEMENT_CHARS",
    "MAX_TURN_OBSERVATIONS",
    "OBSERVATIONS_DIRECTORY",
    "OBSERVATION_PROMPT",
    "Entity",
    "MemoryObservations",
    "Observation",
    "RefreshReport",
    "entities_of",
    "entity_key",
    "fingerprint",
    "observation_file",
    "observation_path",
    "parse_observation",
    "parse_statements",
    "select_observations",
]
