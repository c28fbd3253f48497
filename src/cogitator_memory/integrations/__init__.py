"""Drop-ins for the frameworks agents are built with.

- :class:`~cogitator_memory.integrations.langgraph.CogitatorStore`: LangGraph's ``BaseStore``
  over memory items (``pip install "cogitator-memory[langgraph]"``), see ``docs/langgraph.md``.
- :class:`~cogitator_memory.integrations.openai_agents.CogitatorSession`: the OpenAI Agents
  SDK's ``Session`` over threads (``pip install "cogitator-memory[agents]"``), see
  ``docs/openai-agents.md``.

Importing this package imports neither framework: each class is loaded when first named, and a
missing framework raises :class:`~cogitator_memory.errors.MissingDriverError` with the pip
command.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "CogitatorStore": "langgraph",
    "langchain_embedding_service": "langgraph",
    "CogitatorSession": "openai_agents",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = ["CogitatorSession", "CogitatorStore", "langchain_embedding_service"]
