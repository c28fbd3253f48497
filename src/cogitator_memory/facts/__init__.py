"""Facts: what an application tells memory an agent should know, and core facts about the user.

Facts are memory items. :mod:`cogitator_memory.items.facts` holds the ``FactAdapter`` calls
every store that keeps items has (``add_fact``, ``get_fact``, ``get_facts``, ``update_fact``,
``delete_fact``, ``search_facts``) and their records, re-exported here; :mod:`.core` holds
:class:`CoreFacts`, the key/value facts of a system prompt, over any item store
(``CoreFactsStore``, exported from the package root, opens one on a SQLite file); :mod:`.prompt`
frames memory text as data in a prompt (:func:`prompt_line`). See ``docs/facts.md``.
"""

from ..items.facts import (
    DEFAULT_CATEGORY,
    FACT_KEY,
    FACT_ORIGINS,
    FACT_SUBJECT,
    Fact,
    FactAdapter,
    FactOrigin,
    FactStoreMixin,
    FactUpdate,
    NewFact,
    fact_of,
    is_fact_adapter,
    is_fact_item,
    kind_of_category,
)
from .core import CORE_PREFIX, CORE_SUBJECT, DEFAULT_CORE_SCOPE, CoreFacts, FactHistoryEntry, core_key
from .prompt import MAX_PROMPT_CORE_FACTS, MAX_PROMPT_LINE_CHARS, prompt_line, prompt_lines

__all__ = [
    "CORE_PREFIX",
    "CORE_SUBJECT",
    "DEFAULT_CATEGORY",
    "DEFAULT_CORE_SCOPE",
    "FACT_KEY",
    "FACT_ORIGINS",
    "FACT_SUBJECT",
    "MAX_PROMPT_CORE_FACTS",
    "MAX_PROMPT_LINE_CHARS",
    "CoreFacts",
    "Fact",
    "FactAdapter",
    "FactHistoryEntry",
    "FactOrigin",
    "FactStoreMixin",
    "FactUpdate",
    "NewFact",
    "core_key",
    "fact_of",
    "is_fact_adapter",
    "is_fact_item",
    "kind_of_category",
    "prompt_line",
    "prompt_lines",
]
