"""Anthropic's Messages API: ``POST {base_url}/v1/messages``.

The key goes in ``x-api-key`` with ``anthropic-version`` (:data:`ANTHROPIC_VERSION` unless
``version`` names another); the system prompt is the request's
top-level ``system`` (a list of text blocks) and the conversation alternates ``user`` and
``assistant`` turns of content blocks, as
:func:`~cogitator_memory.context.to_anthropic_request` lays them out (a message's
``cache_breakpoint`` becomes ``cache_control``). ``max_tokens`` is always sent: the API requires it. ``temperature`` is sent only when set, since
the newest Claude models refuse it.

The answer's ``stop_reason`` maps ``end_turn`` and ``stop_sequence`` to ``stop``, ``max_tokens``
and ``model_context_window_exceeded`` to ``length``, ``tool_use`` to ``tool_calls``, ``refusal``
to ``content_filter`` and ``pause_turn`` to ``other``. The text is the answer's ``text`` blocks
joined; thinking blocks are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from ..errors import InvalidArgumentError
from ..http import RetryPolicy, endpoint, env_key_for
from ..threads.records import Message
from .base import DEFAULT_CHAT_TIMEOUT, DEFAULT_MAX_TOKENS, BaseChatClient, normalize_finish, object_at, usage_of
from .convert import to_anthropic_request
from .records import ChatCompletion, FinishReason

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent by default: the version every model and gateway accepts.

Newer versions change what a request may hold (``2026-10-21`` refuses ``temperature``, ``top_p``
and ``top_k`` on every model); pass ``version`` to choose one.
"""

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "other",
}


class AnthropicChatClient(BaseChatClient):
    """Answers from Anthropic's Messages API.

    ``api_key`` defaults to ``$ANTHROPIC_API_KEY`` when ``base_url`` is Anthropic's own (a gateway
    gets a key only when one is passed); a call without one fails before sending.
    ``base_url`` (default ``https://api.anthropic.com``, without ``/v1``) may point at a gateway;
    ``beta`` features are sent as ``anthropic-beta``; ``version`` is the ``anthropic-version``
    header (default :data:`ANTHROPIC_VERSION`).
    """

    provider = "anthropic"

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str = DEFAULT_ANTHROPIC_BASE_URL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
        beta: list[str] | None = None,
        version: str = ANTHROPIC_VERSION,
        timeout: float = DEFAULT_CHAT_TIMEOUT,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if beta is not None and (not isinstance(beta, list) or not all(isinstance(b, str) and b for b in beta)):
            raise InvalidArgumentError("beta", "must be a list of feature names")
        self.beta = list(beta or [])
        if not isinstance(version, str) or not version.strip():
            raise InvalidArgumentError("version", f"must be an API version such as {ANTHROPIC_VERSION!r}")
        self.version = version
        super().__init__(
            model=model,
            base_url=base_url,
            api_key=api_key
            if api_key is not None
            else env_key_for(base_url, DEFAULT_ANTHROPIC_BASE_URL, "ANTHROPIC_API_KEY"),
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
        if self._api_key is None:
            raise self._no_key("ANTHROPIC_API_KEY")
        request = to_anthropic_request(messages)
        if not request["messages"]:
            raise InvalidArgumentError("messages", "hold no text, image or tool content to send")
        blocks: list[dict[str, Any]] = list(request.get("system", []))
        if system is not None:
            blocks.insert(0, {"type": "text", "text": system})
        payload: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
        if blocks:
            payload["system"] = blocks
        payload["messages"] = request["messages"]
        if temperature is not None:
            payload["temperature"] = temperature
        if stop:
            payload["stop_sequences"] = stop
        own = {"x-api-key": self._api_key, "anthropic-version": self.version}
        if self.beta:
            own["anthropic-beta"] = ",".join(self.beta)
        return endpoint(self.base_url, "v1/messages"), payload, self._headers(own)

    def _parse(self, status: int, body: dict[str, Any]) -> ChatCompletion:
        if body.get("type") == "error":
            error = body.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            raise self._malformed(status, f"the answer holds an error: {str(message)[:300]}")
        content = body.get("content")
        if not isinstance(content, list):
            raise self._malformed(status, "no 'content' list")
        texts: list[str] = []
        for i, block in enumerate(content):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                raise self._malformed(status, f"content[{i}] is not a content block")
            if block["type"] == "text":
                if not isinstance(block.get("text"), str):
                    raise self._malformed(status, f"content[{i}] is a text block without text")
                texts.append(block["text"])
        finish, raw = normalize_finish(body.get("stop_reason"), _FINISH)
        usage = object_at(body, "usage")
        prompt: object = usage.get("input_tokens")
        if isinstance(prompt, int):
            for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
                cached = usage.get(key)
                if isinstance(cached, int) and not isinstance(cached, bool):
                    prompt += cached
        model = body.get("model")
        return ChatCompletion(
            text="".join(texts),
            finish_reason=finish,
            raw_finish_reason=raw,
            provider=self.provider,
            model=model if isinstance(model, str) else None,
            usage=usage_of(prompt, usage.get("output_tokens")),
        )


__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_BASE_URL", "AnthropicChatClient"]
