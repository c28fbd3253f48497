"""Google Gemini: ``POST {base_url}/models/{model}:generateContent``.

The key goes in the ``x-goog-api-key`` header (never in the URL, where it would end up in logs).
Messages become ``contents`` of ``user`` and ``model`` turns made of ``parts``
(:func:`to_gemini_request`); system messages and the call's ``system`` become
``systemInstruction``; ``max_tokens``, ``temperature`` and ``stop`` go into ``generationConfig``
as ``maxOutputTokens``, ``temperature`` and ``stopSequences``.

The first candidate's ``finishReason`` maps ``STOP`` to ``stop``, ``MAX_TOKENS`` to ``length``,
the safety reasons (``SAFETY``, ``RECITATION``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``, ``SPII``...)
to ``content_filter`` and everything else to ``other``; a prompt blocked before any candidate
(``promptFeedback.blockReason``) is an empty ``content_filter`` answer. Thought parts are left out
of the text, and thinking tokens count as output.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ..errors import InvalidArgumentError
from ..http import RetryPolicy, endpoint, env_key_for
from ..threads.records import ImageBase64Part, ImageURLPart, Message, TextPart
from .base import DEFAULT_CHAT_TIMEOUT, DEFAULT_MAX_TOKENS, BaseChatClient, normalize_finish, object_at, usage_of
from .convert import _messages as _check_message_list
from .records import ChatCompletion, FinishReason

DEFAULT_GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
}


def _image_part(part: ImageURLPart | ImageBase64Part) -> dict[str, Any]:
    if isinstance(part, ImageBase64Part):
        return {"inlineData": {"mimeType": part.image_base64.media_type, "data": part.image_base64.data}}
    url = part.image_url.url
    if url.startswith("data:") and ";base64," in url:
        media_type, _, data = url[5:].partition(";base64,")
        return {"inlineData": {"mimeType": media_type or "application/octet-stream", "data": data}}
    guessed, _ = mimetypes.guess_type(url.split("?", 1)[0])
    return {"fileData": {"fileUri": url, "mimeType": guessed or "image/jpeg"}}


def to_gemini_request(messages: Sequence[Message | Mapping[str, Any]]) -> dict[str, Any]:
    """``{"contents": [...], "systemInstruction": {...}}`` for Gemini's ``generateContent``.

    System messages go into ``systemInstruction`` (left out when there is none); assistant turns
    are ``model`` turns; tool calls become ``functionCall`` parts and tool messages
    ``functionResponse`` parts of a user turn (named by the message's ``name`` or the call it
    answers); consecutive turns of the same role are merged; blank text parts are left out.
    """
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    for message in _check_message_list(messages):  # type: ignore[arg-type]
        if message.role == "system":
            if message.text.strip():
                system.append({"text": message.text})
            continue
        parts: list[dict[str, Any]] = []
        if message.role == "tool":
            name = message.name or call_names.get(message.tool_call_id or "") or "tool"
            parts.append({"functionResponse": {"name": name, "response": {"content": message.text}}})
        else:
            content = message.content
            for part in [TextPart(text=content)] if isinstance(content, str) else content:
                if isinstance(part, TextPart):
                    if part.text.strip():
                        parts.append({"text": part.text})
                else:
                    parts.append(_image_part(part))
            if message.role == "assistant":
                for call in message.tool_calls or []:
                    call_names[call.id] = call.name
                    parts.append({"functionCall": {"name": call.name, "args": dict(call.arguments)}})
        if not parts:
            continue
        role = "model" if message.role == "assistant" else "user"
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    request: dict[str, Any] = {"contents": contents}
    if system:
        request["systemInstruction"] = {"parts": system}
    return request


class GeminiChatClient(BaseChatClient):
    """Answers from Google's Gemini API (``generateContent``).

    ``api_key`` defaults to ``$GEMINI_API_KEY``, then ``$GOOGLE_API_KEY`` (for Google's own
    ``base_url`` only); a call without one fails before sending. ``model`` may be given with or without its ``models/`` prefix.
    """

    provider = "google"

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str = DEFAULT_GEMINI_BASE_URL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
        timeout: float = DEFAULT_CHAT_TIMEOUT,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if api_key is None:
            api_key = env_key_for(base_url, DEFAULT_GEMINI_BASE_URL, "GEMINI_API_KEY", "GOOGLE_API_KEY")
        super().__init__(
            model=model.removeprefix("models/") if isinstance(model, str) else model,
            base_url=base_url,
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
        if self._api_key is None:
            raise self._no_key("GEMINI_API_KEY / GOOGLE_API_KEY")
        payload = to_gemini_request(messages)
        if not payload["contents"]:
            raise InvalidArgumentError("messages", "hold no text, image or tool content to send")
        if system is not None:
            instruction = payload.setdefault("systemInstruction", {"parts": []})
            instruction["parts"].insert(0, {"text": system})
        config: dict[str, Any] = {"maxOutputTokens": max_tokens}
        if temperature is not None:
            config["temperature"] = temperature
        if stop:
            config["stopSequences"] = stop
        payload["generationConfig"] = config
        url = endpoint(self.base_url, f"models/{model.removeprefix('models/')}:generateContent")
        return url, payload, self._headers({"x-goog-api-key": self._api_key})

    def _parse(self, status: int, body: dict[str, Any]) -> ChatCompletion:
        usage = object_at(body, "usageMetadata")
        output: object = usage.get("candidatesTokenCount")
        thoughts = usage.get("thoughtsTokenCount")
        if isinstance(thoughts, int) and not isinstance(thoughts, bool):
            output = (output if isinstance(output, int) else 0) + thoughts
        used = usage_of(usage.get("promptTokenCount"), output, usage.get("totalTokenCount"))
        version = body.get("modelVersion")
        model = version if isinstance(version, str) else None
        candidates = body.get("candidates")
        if not isinstance(candidates, list) or not candidates:
            feedback = body.get("promptFeedback")
            blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
            if isinstance(blocked, str) and blocked:
                return ChatCompletion(
                    text="",
                    finish_reason="content_filter",
                    raw_finish_reason=blocked,
                    provider=self.provider,
                    model=model,
                    usage=used,
                )
            raise self._malformed(status, "no 'candidates' list")
        candidate = candidates[0]
        if not isinstance(candidate, dict):
            raise self._malformed(status, "candidates[0] is not an object")
        content = candidate.get("content")
        raw_finish = candidate.get("finishReason")
        if content is None:
            if not raw_finish:
                raise self._malformed(status, "candidates[0] has neither 'content' nor 'finishReason'")
            parts: list[Any] = []
        elif not isinstance(content, dict) or not isinstance(content.get("parts", []), list):
            raise self._malformed(status, "candidates[0].content has no 'parts' list")
        else:
            parts = content.get("parts", [])
        texts: list[str] = []
        calls = False
        for i, part in enumerate(parts):
            if not isinstance(part, dict):
                raise self._malformed(status, f"candidates[0].content.parts[{i}] is not an object")
            if "functionCall" in part:
                calls = True
            elif isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
        finish, raw = normalize_finish(raw_finish, _FINISH)
        if calls and finish in ("stop", "other"):
            finish = "tool_calls"
        return ChatCompletion(
            text="".join(texts),
            finish_reason=finish,
            raw_finish_reason=raw,
            provider=self.provider,
            model=model,
            usage=used,
        )


__all__ = ["DEFAULT_GEMINI_BASE_URL", "GeminiChatClient", "to_gemini_request"]
