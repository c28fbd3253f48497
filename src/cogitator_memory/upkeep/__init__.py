"""Memory upkeep between runs: the pre-turn brief, observations and consolidation with the playbook.

:mod:`.brief` holds ``MemoryBriefer`` (cards that quote what memory found for a turn),
:mod:`.observations` ``MemoryObservations`` (what a model makes of each entity's facts, kept as
memory files), :mod:`.consolidation` ``MemoryConsolidator`` (repeats and contradictions marked
stale, lessons folded into the playbook), :mod:`.playbook` the playbook file and its edits, and
:mod:`.prompts` the prompts. Each asks a model through a
:data:`~cogitator_memory.models.SummarizeFn` and checks every answer before anything is kept.
See ``docs/upkeep.md``.
"""

from ..files.paths import MEMORY_RESERVED_PATHS, OBSERVATIONS_DIRECTORY
from .brief import (
    BRIEF_KINDS,
    BRIEF_PROMPT,
    MAX_BRIEF_CARDS,
    BriefCard,
    BriefKind,
    BriefSource,
    MemoryBriefer,
    brief_block,
    parse_brief,
)
from .consolidation import DedupeReport, FoldMode, MemoryConsolidator, StaleMark, StaleReason
from .observations import (
    MemoryObservations,
    Observation,
    RefreshReport,
    parse_observation,
    select_observations,
)
from .playbook import (
    MAX_PLAYBOOK_EDITS,
    MAX_PLAYBOOK_RULES,
    MAX_RULE_CHARS,
    PLAYBOOK_DRAFT_PATH,
    PLAYBOOK_PATH,
    FoldResult,
    Playbook,
    PlaybookEdit,
    PlaybookRule,
    apply_playbook_edits,
    parse_playbook,
    parse_playbook_edits,
    playbook_file,
)
from .prompts import DEDUPE_PROMPT, OBSERVATION_PROMPT, PLAYBOOK_PROMPT

__all__ = [
    "BRIEF_KINDS",
    "BRIEF_PROMPT",
    "DEDUPE_PROMPT",
    "MAX_BRIEF_CARDS",
    "MAX_PLAYBOOK_EDITS",
    "MAX_PLAYBOOK_RULES",
    "MAX_RULE_CHARS",
    "MEMORY_RESERVED_PATHS",
    "OBSERVATIONS_DIRECTORY",
    "OBSERVATION_PROMPT",
    "PLAYBOOK_DRAFT_PATH",
    "PLAYBOOK_PATH",
    "PLAYBOOK_PROMPT",
    "BriefCard",
    "BriefKind",
    "BriefSource",
    "DedupeReport",
    "FoldMode",
    "FoldResult",
    "MemoryBriefer",
    "MemoryConsolidator",
    "MemoryObservations",
    "Observation",
    "Playbook",
    "PlaybookEdit",
    "PlaybookRule",
    "RefreshReport",
    "StaleMark",
    "StaleReason",
    "apply_playbook_edits",
    "brief_block",
    "parse_brief",
    "parse_observation",
    "parse_playbook",
    "parse_playbook_edits",
    "playbook_file",
    "select_observations",
]
