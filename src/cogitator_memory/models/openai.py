"""OpenAI-compatible chat completions: ``POST {base_url}/chat/completions``.

One client serves every server that speaks OpenAI's chat completions API; the server is picked by
``provider`` (a preset with its usual base URL) or by ``base_url``:

============== ================================== ======================= =========================
provider       default base URL                   API key                 answer length field
============== ================================== ======================= =========================
openai         https://api.openai.com/v1          ``$OPENAI_API_KEY``     ``max_completion_tokens``
openrouter     https://openrouter.ai/api/v1       ``$OPENROUTER_API_KEY`` ``max_tokens``
ollama         http://localhost:11434/v1          none                    ``max_tokens``
vllm           http://localhost:8000/v1           none                    ``max_tokens``
llamacpp       http://localhost:8080/v1           none                    ``max_tokens``
lmstudio       http://localhost:1234/v1           none                    ``max_tokens``
compatible     (``base_url`` required)            none                    ``max_tokens``
============== ================================== ======================= =========================

With ``base_url`` and no ``provider``, the preset is read from the URL (``api.openai.com``,
``openrouter.ai``, port 11434 for Ollama, 1234 for LM Studio), else ``compatible``. A key from the
environment is only ever sent to its own provider's host (``provider="openai"`` with another
``base_url`` sends no key from the environment); any other server gets ``api_key`` when you pass
one.

The answer's ``finish_reason`` maps ``stop`` to ``stop``, ``length`` to ``length`` (cut at
``max_tokens``), ``tool_calls``/``function_call`` to ``tool_calls`` and ``content_filter`` to
``content_filter``; a ``refusal`` with no content counts as ``content_filter``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import InvalidArgumentError
from ..http import RetryPolicy, endpoint, env_key_for
from ..threads.records import Message
from .base import DEFAULT_CHAT_TIMEOUT, DEFAULT_MAX_TOKENS, BaseChatClient, normalize_finish, object_at, usage_of
from .convert import to_openai_messages
from .records import ChatCompletion, FinishReason


@dataclass(frozen=True)
class OpenAICompatiblePreset:
    """One OpenAI-compatible server: its usual base URL, where its key comes from, and how it
    names the answer length (``max_completion_tokens`` on OpenAI, ``max_tokens`` elsewhere)."""

    base_url: str | None
    api_key_env: str | None = None
    max_tokens_field: str = "max_tokens"


OPENAI_COMPATIBLE_PRESETS: dict[str, OpenAICompatiblePreset] = {
    "openai": OpenAICompatiblePreset("https://api.openai.com/v1", "OPENAI_API_KEY", "max_completion_tokens"),
    "openrouter": OpenAICompatiblePreset("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "ollama": OpenAICompatiblePreset("http://localhost:11434/v1"),
    "vllm": OpenAICompatiblePreset("http://localhost:8000/v1"),
    "llamacpp": OpenAICompatiblePreset("http://localhost:8080/v1"),
    "lmstudio": OpenAICompatiblePreset("http://localhost:1234/v1"),
    "compatible": OpenAICompatiblePreset(None),
}
"""The OpenAI-compatible servers :class:`OpenAIChatClient` knows by name."""

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "eos": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def preset_for_url(base_url: str) -> str:
    """The preset an OpenAI-compatible ``base_url`` points at (``compatible`` when unknown)."""
    try:
        parts = urlsplit(base_url)
        host, port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return "compatible"
    if host == "api.openai.com":
        return "openai"
    if host == "openrouter.ai" or host.endswith(".openrouter.ai"):
        return "openrouter"
    if port == 11434:
        return "ollama"
    if port == 1234:
        return "lmstudio"
    return "compatible"


def _text_of(content: object) -> str | None:
    """The text of a message's ``content``: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict):
                return None
            if part.get("type") in ("text", "output_text") and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "".join(texts)
    return None


class OpenAIChatClient(BaseChatClient):
    """Chat completions from OpenAI or any server with the same API (see the module docs).

    ``provider`` names the preset (``openai``, ``openrouter``, ``ollama``, ``vllm``,
    ``llamacpp``, ``lmstudio``, ``compatible``) and is the name errors show; ``base_url``
    overrides its URL. ``api_key`` defaults to the preset's environment variable; without one no
    ``Authorization`` header is sent. ``organization`` is sent as ``OpenAI-Organization``;
    ``max_tokens_field`` overrides the preset's name of the answer length field.
    """

    def __init__(
        self,
        *,
        model: str,
        provider: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        organization: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
        max_tokens_field: str | None = None,
        timeout: float = DEFAULT_CHAT_TIMEOUT,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if provider is None:
            provider = "openai" if base_url is None else preset_for_url(base_url)
        if not isinstance(provider, str) or provider.lower() not in OPENAI_COMPATIBLE_PRESETS:
            raise InvalidArgumentError(
                "provider", f"must be one of {', '.join(OPENAI_COMPATIBLE_PRESETS)}, got {provider!r}"
            )
        self.provider = provider.lower()
        preset = OPENAI_COMPATIBLE_PRESETS[self.provider]
        url = base_url if base_url is not None else preset.base_url
        if url is None:
            raise InvalidArgumentError("base_url", f"is required for provider '{self.provider}'")
        if api_key is None and preset.api_key_env and preset.base_url is not None:
            api_key = env_key_for(url, preset.base_url, preset.api_key_env)
        self._key_env = preset.api_key_env
        if max_tokens_field is not None and max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise InvalidArgumentError(
                "max_tokens_field", f"must be 'max_tokens' or 'max_completion_tokens', got {max_tokens_field!r}"
            )
        self.max_tokens_field = max_tokens_field or preset.max_tokens_field
        if organization is not None and not isinstance(organization, str):
            raise InvalidArgumentError("organization", "must be a string or None")
        self._organization = organization
        super().__init__(
            model=model,
            base_url=url,
            api_key=api_key,
            max_tokens=max_tokens,
            temperature=temperature,
            timeout=timeout,
            retry=retry,
            http_client=http_client,
            headers=headers,
        )

    def _request(
        self,
        messages: list[Message],
        *,
        model: str,
        system: str | None,
        max_tokens: int,
        temperature: float | None,
        stop: list[str] | None,
    ) -> tuple[str, dict[str, Any], dict[str, str]]:
        if self._api_key is None and self.provider in ("openai", "openrouter"):
            raise self._no_key(self._key_env or "the provider's key variable")
        sent = to_openai_messages(messages)
        if system is not None:
            sent.insert(0, {"role": "system", "content": system})
        payload: dict[str, Any] = {"model": model, "messages": sent, self.max_tokens_field: max_tokens}
        if temperature is not None:
            payload["temperature"] = temperature
        if stop:
            payload["stop"] = stop
        own: dict[str, str] = {}
        if self._api_key:
            own["authorization"] = f"Bearer {self._api_key}"
        if self._organization:
            own["openai-organization"] = self._organization
        return endpoint(self.base_url, "chat/completions"), payload, self._headers(own)

    def _parse(self, status: int, body: dict[str, Any]) -> ChatCompletion:
        error = body.get("error")
        if error and "choices" not in body:  # OpenRouter reports upstream failures in a 200 answer
            message = error.get("message") if isinstance(error, dict) else error
            raise self._malformed(status, f"the answer holds an error: {str(message)[:300]}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise self._malformed(status, "no 'choices' list")
        choice = choices[0]
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise self._malformed(status, "choices[0] has no 'message' object")
        text = _text_of(message.get("content"))
        if text is None:
            raise self._malformed(status, "choices[0].message.content is neither text nor text parts")
        finish, raw = normalize_finish(choice.get("finish_reason"), _FINISH)
        refusal = message.get("refusal")
        if not text and isinstance(refusal, str) and refusal:
            finish = "content_filter"
        if finish == "stop" and message.get("tool_calls"):
            finish = "tool_calls"
        usage = object_at(body, "usage")
        model = body.get("model")
        return ChatCompletion(
            text=text,
            finish_reason=finish,
            raw_finish_reason=raw,
            provider=self.provider,
            model=model if isinstance(model, str) else None,
            usage=usage_of(usage.get("prompt_tokens"), usage.get("completion_tokens"), usage.get("total_tokens")),
        )


__all__ = ["OPENAI_COMPATIBLE_PRESETS", "OpenAIChatClient", "OpenAICompatiblePreset", "preset_for_url"]
