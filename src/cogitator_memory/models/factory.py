"""``create_chat_client(provider, **settings)``: a chat client from a plain configuration.

``provider`` is ``anthropic``, ``google`` (or ``gemini``), or one of the OpenAI-compatible
presets (``openai``, ``openrouter``, ``ollama``, ``vllm``, ``llamacpp``, ``lmstudio``,
``compatible``); ``settings`` are the keyword arguments of that client's class (``model``,
``api_key``, ``base_url``, ``max_tokens``, ``temperature``, ``timeout``...) and the fields of
:class:`~cogitator_memory.http.RetryPolicy` flat (``max_retries``, ``backoff_base``,
``backoff_max``, ``jitter``, ``max_retry_after``). A mapping (or a pydantic model) holding
``provider`` and the settings may be passed instead. An unknown provider or setting raises
:class:`~cogitator_memory.errors.InvalidArgumentError` naming it; nothing connects until the
first call.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgumentError
from ..http import RETRY_KEYS, RetryPolicy
from .anthropic import AnthropicChatClient
from .base import BaseChatClient
from .gemini import GeminiChatClient
from .openai import OPENAI_COMPATIBLE_PRESETS, OpenAIChatClient

CHAT_PROVIDERS: dict[str, type[BaseChatClient]] = {
    **dict.fromkeys(OPENAI_COMPATIBLE_PRESETS, OpenAIChatClient),
    "anthropic": AnthropicChatClient,
    "google": GeminiChatClient,
    "gemini": GeminiChatClient,
}
"""The providers :func:`create_chat_client` knows, by name, and the class serving each."""


def _options(cls: type[BaseChatClient]) -> set[str]:
    params = inspect.signature(cls.__init__).parameters
    return {name for name, p in params.items() if name != "self" and p.kind is not p.VAR_KEYWORD}


def create_chat_client(provider: str | Mapping[str, Any] | Any, **settings: Any) -> BaseChatClient:
    """Build the chat client ``provider`` and ``settings`` describe (see the module docs).

    >>> client = create_chat_client("ollama", model="llama3.2")
    >>> client.provider, client.base_url
    ('ollama', 'http://localhost:11434/v1')
    """
    if not isinstance(provider, str):
        if hasattr(provider, "model_dump") and not isinstance(provider, Mapping):
            provider = provider.model_dump(exclude_none=True)
        if not isinstance(provider, Mapping):
            raise InvalidArgumentError("provider", f"expected a name or a mapping, got {type(provider).__name__}")
        settings = {**provider, **settings}
        provider = settings.pop("provider", None)
    if not isinstance(provider, str) or provider.lower() not in CHAT_PROVIDERS:
        raise InvalidArgumentError("provider", f"must be one of {', '.join(CHAT_PROVIDERS)}, got {provider!r}")
    name = provider.lower()
    cls = CHAT_PROVIDERS[name]
    allowed = (_options(cls) - {"http_client", "retry", "provider"}) | set(RETRY_KEYS)
    for key in settings:
        if key not in allowed:
            raise InvalidArgumentError(
                key, f"is not a setting of the '{name}' provider (settings: {', '.join(sorted(allowed))})"
            )
    options = dict(settings)
    retry_fields = {k: options.pop(k) for k in RETRY_KEYS if k in options}
    if retry_fields:
        options["retry"] = RetryPolicy(**retry_fields)
    if cls is OpenAIChatClient:
        options["provider"] = name
    if "model" not in options:
        raise InvalidArgumentError("model", f"is required for the '{name}' provider")
    try:
        return cls(**options)
    except TypeError as exc:
        raise InvalidArgumentError("settings", str(exc)) from exc


__all__ = ["CHAT_PROVIDERS", "create_chat_client"]
