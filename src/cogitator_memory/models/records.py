"""What the model clients take and give: ``SummarizeFn``, its options, a completion, the error.

:data:`SummarizeFn` is how every part of the package that needs a model (compaction, extraction,
briefs) reaches one: ``await summarize(messages, options)`` returns the model's answer as text.
Write one yourself, or make one from a chat client with
:func:`~cogitator_memory.models.summarize_fn`.

:class:`ChatCompletion` is one answer of a chat client, with its finish reason normalised across
providers, so a caller can tell an answer cut at its length limit (``truncated``) from a whole one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict

from ..errors import InvalidArgumentError
from ..http import ProviderServiceError
from ..threads.records import Message

FinishReason: TypeAlias = Literal["stop", "length", "tool_calls", "content_filter", "other"]
"""Why a model stopped, the same for every provider.

``stop``: it finished (or hit a stop sequence); ``length``: it was cut at its token limit;
``tool_calls``: it asks for tools; ``content_filter``: a safety filter blocked or cut it;
``other``: anything else, or the provider said nothing.
"""

FINISH_REASONS: tuple[FinishReason, ...] = ("stop", "length", "tool_calls", "content_filter", "other")


class ModelServiceError(ProviderServiceError):
    """A chat model provider failed: HTTP error, timeout, unreachable server or malformed answer.

    ``provider`` is the client's provider name (``"openai"``, ``"ollama"``, ``"anthropic"``,
    ``"google"``...), ``status`` the HTTP status of the last answer (``None`` when there was
    none: timeout, connection error, no API key), ``retryable`` whether the failure was of a kind
    that is retried (429, 5xx, timeouts, connection errors) and ``attempts`` how many requests
    were made. The message names the provider and the status and never holds a credential.
    """

    service = "chat"


class TokenUsage(BaseModel):
    """Tokens one call used, as the provider counted them (``None`` where it did not say).

    ``input_tokens`` counts the whole prompt, cached parts included; ``output_tokens`` the answer,
    thinking included.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None


class ChatCompletion(BaseModel):
    """One answer of a chat model.

    ``text`` is the answer's text (text parts joined, thinking left out); ``finish_reason`` the
    normalised reason it stopped (:data:`FinishReason`), ``raw_finish_reason`` the provider's own
    word for it (``"length"``, ``"max_tokens"``, ``"MAX_TOKENS"``...); ``model`` the model that
    answered, as the provider named it; ``usage`` its token counts when the provider sent them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    finish_reason: FinishReason
    raw_finish_reason: str | None = None
    provider: str
    model: str | None = None
    usage: TokenUsage | None = None

    @property
    def truncated(self) -> bool:
        """Whether the answer was cut at its length limit (so it may end mid-sentence or mid-JSON)."""
        return self.finish_reason == "length"


def check_max_tokens(value: object, argument: str = "max_tokens") -> int:
    """``value`` as a positive int, else ``InvalidArgumentError`` naming ``argument``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(argument, f"must be a positive integer, got {value!r}")
    return value


@dataclass(frozen=True)
class SummarizeOptions:
    """What a :data:`SummarizeFn` call asks for; every field may be left out.

    ``model`` names the model (the client's own model when ``None``), ``prompt`` is the
    instruction sent as the system prompt (a short summary request when ``None``) and
    ``max_tokens`` bounds the answer (the client's default when ``None``).
    """

    model: str | None = None
    prompt: str | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.model is not None and (not isinstance(self.model, str) or not self.model.strip()):
            raise InvalidArgumentError("model", f"must be a non-empty string or None, got {self.model!r}")
        if self.prompt is not None and not isinstance(self.prompt, str):
            raise InvalidArgumentError("prompt", f"must be a string or None, got {type(self.prompt).__name__}")
        if self.max_tokens is not None:
            check_max_tokens(self.max_tokens)

    @classmethod
    def of(cls, value: SummarizeOptions | Mapping[str, Any] | None) -> SummarizeOptions:
        """``value`` as options: options as they are, a dict of their fields, or ``None`` (all unset)."""
        if value is None:
            return cls()
        if isinstance(value, SummarizeOptions):
            return value
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"model", "prompt", "max_tokens"})
            if unknown:
                raise InvalidArgumentError(unknown[0], "is not a summarize option (model, prompt, max_tokens)")
            return cls(**value)
        raise InvalidArgumentError("options", f"must be SummarizeOptions, a dict or None, got {type(value).__name__}")


SummarizeFn: TypeAlias = Callable[[Sequence[Message], SummarizeOptions], Awaitable[str]]
"""``async (messages, options) -> str``: ask a model about ``messages`` as ``options`` say.

The messages are the package's :class:`~cogitator_memory.Message` records; the answer is the
model's text. A function that cannot reach its model raises (the shipped ones raise
:class:`ModelServiceError`).
"""


__all__ = [
    "FINISH_REASONS",
    "ChatCompletion",
    "FinishReason",
    "ModelServiceError",
    "SummarizeFn",
    "SummarizeOptions",
    "TokenUsage",
    "check_max_tokens",
]
