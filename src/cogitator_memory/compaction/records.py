"""Records of compaction: the result of a ``compact()`` call and the error a refused one raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import MemoryStoreError
from ..threads.records import Evidence

CompactionStrategy = Literal["summary", "sliding-window", "hybrid", "hierarchical"]
"""How older entries are replaced: a model's summary, a window of the newest entries, the
window when it would leave out at most :data:`HYBRID_WINDOW_LIMIT` entries (else a summary), or
a tree of checked atoms (``hierarchical``)."""

COMPACTION_STRATEGIES: tuple[str, ...] = ("summary", "sliding-window", "hybrid", "hierarchical")

#: ``hybrid`` leaves entries out without a summary when at most this many would go.
HYBRID_WINDOW_LIMIT = 5

#: Entries kept as they are when ``keep_recent`` is not given.
DEFAULT_KEEP_RECENT = 10

#: Seconds a summarizer may take before the compaction gives up (and writes nothing).
DEFAULT_SUMMARY_TIMEOUT = 120.0


class CompactionError(MemoryStoreError):
    """A compaction was refused and the thread left as it was: the summarizer failed, timed out
    or answered no usable summary, or entries it summarized were deleted or redacted meanwhile."""


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What ``compact()`` did.

    ``session_id`` is the thread; ``original_messages`` the conversation entries of its
    compacted view before, ``compacted_messages`` after (the summary counting as one);
    ``summary_tokens`` the tokens of the summary written (0 when none was written or the window
    strategy wrote a note). ``entry_id`` is the compaction entry written, ``None`` when the
    thread was under its thresholds and nothing was written; ``strategy`` the one applied
    (``hybrid`` resolves to ``summary`` or ``sliding-window``); ``covered`` how many entries
    the new compaction stands in for, beyond an earlier summary.
    """

    session_id: str
    original_messages: int
    compacted_messages: int
    summary_tokens: int
    entry_id: str | None = None
    strategy: str | None = None
    covered: int = 0

    @property
    def compacted(self) -> bool:
        """Whether a compaction entry was written."""
        return self.entry_id is not None


AtomKind = Literal["fact", "task", "decision", "constraint", "error", "file", "thread"]
"""What a :class:`CompactionAtom` records; ``thread`` is an open question."""

ATOM_KINDS: tuple[str, ...] = ("fact", "task", "decision", "constraint", "error", "file", "thread")

#: Kinds whose open atoms are open items: carried until a verified atom closes them.
OPEN_ITEM_KINDS: tuple[str, ...] = ("task", "decision", "constraint", "error", "thread")


class CompactionAtom(BaseModel):
    """One thing a hierarchical compaction kept: its ``kind`` (:data:`AtomKind`), ``status``
    (``open`` or ``closed``), ``text`` and ``evidence`` (quotes of entries).

    ``id`` is derived from the kind and the text (so the same item said again has the same id);
    ``verified`` says every quote was found in the entry it names. ``source`` is ``model`` for
    atoms a model answered and ``entries`` for those read from the entries without one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    kind: AtomKind
    status: Literal["open", "closed"] = "open"
    text: str = Field(min_length=1)
    evidence: list[Evidence] = Field(default_factory=list)
    verified: bool = False
    source: Literal["model", "entries"] = "model"


class CompactionNode(BaseModel):
    """A chapter, an arc or the saga: the entries it covers (``from``, ``to``: entry ids) and its atoms."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    from_: str | None = Field(default=None, alias="from")
    to: str | None = None
    atoms: list[CompactionAtom] = Field(default_factory=list)


class CompactionLevels(BaseModel):
    """The tree a hierarchical compaction keeps (``event.levels``): the ``saga`` (everything
    folded), the ``arcs`` (folded chapters) and the newest ``chapters``, oldest first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    saga: CompactionNode | None = None
    arcs: list[CompactionNode] = Field(default_factory=list)
    chapters: list[CompactionNode] = Field(default_factory=list)

    def dump(self) -> dict[str, Any]:
        """The levels as JSON-ready data (``from`` under its own name), as ``event.levels`` holds them."""
        return self.model_dump(mode="json", by_alias=True)


__all__ = [
    "ATOM_KINDS",
    "COMPACTION_STRATEGIES",
    "DEFAULT_KEEP_RECENT",
    "DEFAULT_SUMMARY_TIMEOUT",
    "HYBRID_WINDOW_LIMIT",
    "OPEN_ITEM_KINDS",
    "AtomKind",
    "CompactionAtom",
    "CompactionError",
    "CompactionLevels",
    "CompactionNode",
    "CompactionResult",
    "CompactionStrategy",
]
