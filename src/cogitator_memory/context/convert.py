"""Message conversion moved to :mod:`cogitator_memory.models.convert` (the model clients use it, and
the models package must not import the context builder); this module keeps the old import path."""

from __future__ import annotations

from ..models.convert import from_anthropic_messages, from_openai_messages, to_anthropic_request, to_openai_messages

__all__ = ["from_anthropic_messages", "from_openai_messages", "to_anthropic_request", "to_openai_messages"]
