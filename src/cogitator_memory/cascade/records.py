"""What a cascade reports and whom it goes through: :class:`CascadeCounts`, :class:`CascadeWho`,
:class:`CascadePlan` (what a dry run would take)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import InvalidArgumentError
from ..threads import tree


@dataclass
class EntryCounts:
    """Entries deleted and entries redacted (kept in place, their text replaced)."""

    deleted: int = 0
    redacted: int = 0


@dataclass
class ItemCounts:
    """Memory items purged (deleted), trimmed (lost the quotes of what went) and made stale."""

    purged: int = 0
    trimmed: int = 0
    stale: int = 0


@dataclass
class FactCounts:
    """Facts deleted and facts trimmed (lost the quotes of what went)."""

    deleted: int = 0
    trimmed: int = 0


@dataclass
class GraphCounts:
    """Graph nodes and edges deleted, and nodes or edges trimmed (lost the quotes of what went)."""

    nodes: int = 0
    edges: int = 0
    trimmed: int = 0


@dataclass
class CascadeCounts:
    """What one cascade took out of memory.

    ``entries`` deleted and redacted; ``threads`` deleted whole; ``threads_changed`` the threads
    kept that lost or had redacted entries; ``summaries`` compaction summaries deleted; ``items``
    purged, trimmed or made stale; ``entities`` graph nodes deleted because no item is about them
    any more; ``facts`` and ``graph`` deleted or trimmed; ``vectors`` embeddings deleted;
    ``file_versions`` memory file versions redacted; ``files`` memory files deleted (their version
    in front was redacted); ``playbook_rules`` rules taken out of a playbook; ``skipped`` what
    the cascade could not read or finish and went past, one sentence each (a thread's
    ``memory_forks`` or ``memory_agent_ids`` holding something that is not an id, a SQLite WAL
    that could not be emptied): empty when nothing was left aside.
    """

    entries: EntryCounts = field(default_factory=EntryCounts)
    threads: int = 0
    threads_changed: int = 0
    summaries: int = 0
    items: ItemCounts = field(default_factory=ItemCounts)
    entities: int = 0
    facts: FactCounts = field(default_factory=FactCounts)
    graph: GraphCounts = field(default_factory=GraphCounts)
    vectors: int = 0
    file_versions: int = 0
    files: int = 0
    playbook_rules: int = 0
    skipped: list[str] = field(default_factory=list)

    def dump(self) -> dict[str, Any]:
        """The counts as plain data (nested dicts of ints)."""
        return asdict(self)

    def add(self, other: CascadeCounts) -> None:
        """Add ``other``'s counts to these (a second pass of the same cascade)."""
        for name in ("threads", "threads_changed", "summaries", "entities", "vectors", "file_versions", "files"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.playbook_rules += other.playbook_rules
        for group in ("entries", "items", "facts", "graph"):
            mine, theirs = getattr(self, group), getattr(other, group)
            for key, value in asdict(theirs).items():
                setattr(mine, key, getattr(mine, key) + value)
        self.skipped.extend(s for s in other.skipped if s not in self.skipped)


@dataclass(frozen=True)
class CascadeWho:
    """Whose derived memory a cascade goes through: the agents (``agent_ids``) whose items,
    files, facts and graph are searched. The agents of the threads it touches
    (``Thread.agent_id`` and ``metadata["memory_agent_ids"]``) are always added."""

    agent_ids: tuple[str, ...] = ()


WhoInput = CascadeWho | Mapping[str, Any] | Sequence[str] | None


def check_who(value: object) -> CascadeWho:
    """A :class:`CascadeWho` from one, a dict with ``agent_ids``, a list of agent ids or ``None``."""
    if value is None:
        return CascadeWho()
    if isinstance(value, CascadeWho):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - {"agent_ids"}
        if unknown:
            raise InvalidArgumentError(f"who.{sorted(unknown)[0]}", "is not a field of who (agent_ids)")
        value = value.get("agent_ids") or ()
        name = "who.agent_ids"
    else:
        name = "who"
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise InvalidArgumentError(name, "must be a list of agent ids")
    return CascadeWho(tuple(dict.fromkeys(tree.check_id(f"{name}[{i}]", a) for i, a in enumerate(value))))


@dataclass
class CascadePlan:
    """What a cascade would take, found without changing anything (a dry run): the ``threads``
    it would delete whole and, by thread, the ``entries`` it would delete or redact (replies and
    copies in forks included); ``skipped`` what it could not read (as in :class:`CascadeCounts`)."""

    threads: list[str] = field(default_factory=list)
    entries: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    @property
    def entry_count(self) -> int:
        """How many entries would go, over every thread."""
        return sum(len(ids) for ids in self.entries.values())


__all__ = [
    "CascadeCounts",
    "CascadePlan",
    "CascadeWho",
    "EntryCounts",
    "FactCounts",
    "GraphCounts",
    "ItemCounts",
    "WhoInput",
    "check_who",
]
