"""The chat client interface, the base class of the shipped clients, and ``summarize_fn``.

Users type against :class:`ChatClient` (``complete(messages, ...) -> ChatCompletion``). The
shipped clients subclass :class:`BaseChatClient`, which checks the arguments once for every
provider, posts through the package's shared HTTP plumbing (:mod:`cogitator_memory.http`:
timeouts, retries honouring ``Retry-After``, credentials kept out of messages) and leaves a
subclass only the request shape (:meth:`BaseChatClient._request`) and the reading of the answer
(:meth:`BaseChatClient._parse`).

:func:`summarize_fn` makes a :data:`~cogitator_memory.models.SummarizeFn` of any chat client.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import httpx

from ..errors import InvalidArgumentError
from ..http import JsonHttpClient, RetryPolicy, redact_url
from ..threads.records import Message
from .convert import _messages as _check_message_list
from .records import (
    ChatCompletion,
    FinishReason,
    ModelServiceError,
    SummarizeFn,
    SummarizeOptions,
    TokenUsage,
    check_max_tokens,
)

DEFAULT_SUMMARY_PROMPT = (
    "Summarize the conversation above in a few sentences: what was asked, what was decided, "
    "the names and numbers that matter, and what is still open."
)
"""The system prompt :func:`summarize_fn` sends when the options carry none."""

FOLLOW_UP_MESSAGE = "Answer now, as the system prompt asks, about the conversation above."
"""The user turn :func:`summarize_fn` adds when the messages do not end with one (see there)."""

DEFAULT_MAX_TOKENS = 4096
"""Answer length a client asks for when neither the call nor the client names one."""

DEFAULT_CHAT_TIMEOUT = 120.0
"""Seconds one chat request may take before it counts as timed out (answers take a while)."""


@runtime_checkable
class ChatClient(Protocol):
    """A chat model: messages in, one :class:`~cogitator_memory.models.ChatCompletion` out.

    ``complete`` raises :class:`~cogitator_memory.models.ModelServiceError` when the provider
    fails and :class:`~cogitator_memory.errors.InvalidArgumentError` for bad arguments.
    """

    @property
    def provider(self) -> str:
        """The provider's name, as errors show it."""
        ...

    @property
    def model(self) -> str:
        """The model asked when a call names none."""
        ...

    async def complete(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        model: str | None = None,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatCompletion:
        """The model's answer to ``messages`` (``system`` goes before every system message)."""
        ...


def check_messages(messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]:
    """``messages`` as records, or ``InvalidArgumentError`` naming the bad one.

    At least one message must be other than ``system``: there must be something to answer.
    """
    checked = _check_message_list(messages)  # type: ignore[arg-type]
    if not any(m.role != "system" for m in checked):
        raise InvalidArgumentError("messages", "holds no user, assistant or tool message to answer")
    return checked


def check_stop(stop: object) -> list[str] | None:
    """Stop sequences as a list of non-empty strings (``None`` when not given)."""
    if stop is None:
        return None
    if isinstance(stop, str | bytes) or not isinstance(stop, Sequence):
        raise InvalidArgumentError("stop", f"must be a list of strings, got {type(stop).__name__}")
    out: list[str] = []
    for i, item in enumerate(stop):
        if not isinstance(item, str) or not item:
            raise InvalidArgumentError(f"stop[{i}]", f"must be a non-empty string, got {item!r}")
        out.append(item)
    return out or None


def check_temperature(value: object) -> float | None:
    """A temperature as a finite number >= 0, or ``None``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidArgumentError("temperature", f"must be a number >= 0, got {value!r}")
    return float(value)


def check_model(value: object, argument: str = "model") -> str:
    """A model name: a non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(argument, f"must be a non-empty string, got {value!r}")
    return value


def check_base_url(value: object) -> str:
    """A base URL: ``http://`` or ``https://`` and a host; returned without a trailing slash."""
    if not isinstance(value, str) or not value.startswith(("http://", "https://")) or len(value.split("/")) < 3:
        shown = redact_url(value) if isinstance(value, str) else repr(value)
        raise InvalidArgumentError("base_url", f"must be an http:// or https:// URL, got {shown!r}")
    return value.rstrip("/")


def object_at(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``body[key]`` when it is a JSON object, else an empty dict (for optional parts of an answer)."""
    value = body.get(key)
    return value if isinstance(value, dict) else {}


def usage_of(input_tokens: object, output_tokens: object, total_tokens: object = None) -> TokenUsage | None:
    """Token counts from a provider's answer; counts that are not non-negative ints are dropped."""

    def count(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    used_in, used_out, total = count(input_tokens), count(output_tokens), count(total_tokens)
    if used_in is None and used_out is None and total is None:
        return None
    if total is None and used_in is not None and used_out is not None:
        total = used_in + used_out
    return TokenUsage(input_tokens=used_in, output_tokens=used_out, total_tokens=total)


class BaseChatClient(ABC):
    """What every shipped chat client shares: argument checks, HTTP with retries, a safe repr.

    ``model`` is the model a call asks when it names none; ``max_tokens`` and ``temperature`` the
    defaults of a call (``temperature`` is sent only when set); ``timeout`` the seconds one request
    may take; ``retry`` the :class:`~cogitator_memory.http.RetryPolicy`; ``headers`` extra
    request headers (e.g. OpenRouter's ``HTTP-Referer``). A client passed as ``http_client`` is
    used as is and not closed by :meth:`aclose`. Clients are async context managers.

    Subclasses set ``provider`` and implement :meth:`_request` and :meth:`_parse`.
    """

    provider: str = "chat"

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float | None = None,
        timeout: float = DEFAULT_CHAT_TIMEOUT,
        retry: RetryPolicy | None = None,
        http_client: httpx.AsyncClient | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.model = check_model(model)
        self.base_url = check_base_url(base_url)
        if api_key is not None and not isinstance(api_key, str):
            raise InvalidArgumentError("api_key", f"must be a string or None, got {type(api_key).__name__}")
        self._api_key = api_key or None
        self.max_tokens = check_max_tokens(max_tokens)
        self.temperature = check_temperature(temperature)
        if headers is not None and (
            not isinstance(headers, Mapping)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        ):
            raise InvalidArgumentError("headers", "must be a mapping of header names to string values")
        self._extra_headers = {k.lower(): v for k, v in (headers or {}).items()}
        self._transport = JsonHttpClient(
            error=self._error,
            timeout=timeout,
            retry=retry,
            http_client=http_client,
            secrets=[self._api_key] if self._api_key else [],
        )

    @property
    def timeout(self) -> float:
        """Seconds one request may take."""
        return self._transport.timeout

    @property
    def retry(self) -> RetryPolicy:
        """How failed requests are retried."""
        return self._transport.retry

    def _error(self, status: int | None, detail: str, retryable: bool, attempts: int) -> ModelServiceError:
        return ModelServiceError(self.provider, status, detail, retryable=retryable, attempts=attempts)

    def _malformed(self, status: int, detail: str) -> ModelServiceError:
        return ModelServiceError(self.provider, status, f"malformed answer: {detail}")

    def _headers(self, own: Mapping[str, str]) -> dict[str, str]:
        return {"content-type": "application/json", **self._extra_headers, **own}

    async def complete(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        model: str | None = None,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatCompletion:
        """Ask the model about ``messages`` and return its answer.

        ``system`` is sent before the messages' own system messages. ``model``, ``max_tokens``
        and ``temperature`` default to the client's. Raises
        :class:`~cogitator_memory.models.ModelServiceError` when the provider fails (after the
        retries the policy allows) or answers something this client cannot read.
        """
        checked = check_messages(messages)
        if system is not None and not isinstance(system, str):
            raise InvalidArgumentError("system", f"must be a string or None, got {type(system).__name__}")
        url, payload, headers = self._request(
            checked,
            model=self.model if model is None else check_model(model),
            system=system if system and system.strip() else None,
            max_tokens=self.max_tokens if max_tokens is None else check_max_tokens(max_tokens),
            temperature=self.temperature if temperature is None else check_temperature(temperature),
            stop=check_stop(stop),
        )
        status, body = await self._transport.post_json(url, payload, headers)
        if not isinstance(body, dict):
            raise self._malformed(status, f"body is a JSON {type(body).__name__}, not an object")
        return self._parse(status, body)

    @abstractmethod
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
        """The URL, JSON body and headers of one call (arguments already checked).

        Raises :class:`ModelServiceError` (with ``attempts=0``) when the call cannot be sent,
        e.g. without an API key the provider needs.
        """

    @abstractmethod
    def _parse(self, status: int, body: dict[str, Any]) -> ChatCompletion:
        """The completion in a successful answer's JSON object, or ``self._malformed(...)`` raised."""

    def _no_key(self, where: str) -> ModelServiceError:
        return ModelServiceError(
            self.provider,
            None,
            f"no API key: pass api_key, or set {where} (read only for the provider's own base_url)",
            attempts=0,
        )

    def as_summarize_fn(
        self,
        *,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
        on_completion: Callable[[ChatCompletion], None] | None = None,
    ) -> SummarizeFn:
        """This client as a :data:`~cogitator_memory.models.SummarizeFn` (see :func:`summarize_fn`)."""
        return summarize_fn(self, prompt=prompt, on_completion=on_completion)

    async def aclose(self) -> None:
        """Close the HTTP client if this client created it; safe to call twice."""
        await self._transport.aclose()

    async def __aenter__(self) -> BaseChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={redact_url(self.base_url)!r})"
        )


def normalize_finish(raw: object, table: Mapping[str, FinishReason]) -> tuple[FinishReason, str | None]:
    """``(normalised reason, raw reason)`` from a provider's finish reason and its mapping table."""
    if not isinstance(raw, str) or not raw:
        return "other", None
    return table.get(raw, "other"), raw


def summarize_fn(
    client: ChatClient,
    *,
    prompt: str = DEFAULT_SUMMARY_PROMPT,
    on_completion: Callable[[ChatCompletion], None] | None = None,
) -> SummarizeFn:
    """A :data:`~cogitator_memory.models.SummarizeFn` that asks ``client``.

    Each call sends ``options.prompt`` (else ``prompt``) as the system prompt, then the messages,
    asking ``options.model`` (else the client's model) for at most ``options.max_tokens`` (else
    the client's default) tokens, and returns the answer's text. When the messages do not end
    with a user message, :data:`FOLLOW_UP_MESSAGE` is added as one, so no provider takes the
    last assistant message as the start of its own answer. ``on_completion`` sees every
    :class:`~cogitator_memory.models.ChatCompletion`, e.g. to log usage or to notice an answer
    cut at its length limit (``completion.truncated``); the text is returned either way, and a
    reader such as :func:`~cogitator_memory.models.read_json_array` keeps what was finished.
    """
    if not isinstance(client, ChatClient):
        raise InvalidArgumentError("client", f"must be a chat client with complete(), got {type(client).__name__}")
    if not isinstance(prompt, str):
        raise InvalidArgumentError("prompt", f"must be a string, got {type(prompt).__name__}")
    if on_completion is not None and not callable(on_completion):
        raise InvalidArgumentError("on_completion", "must be callable or None")

    async def summarize(
        messages: Sequence[Message], options: SummarizeOptions | Mapping[str, Any] | None = None
    ) -> str:
        opts = SummarizeOptions.of(options)
        conversation = check_messages(messages)
        last = next(m for m in reversed(conversation) if m.role != "system")
        if last.role != "user":
            conversation.append(Message(role="user", content=FOLLOW_UP_MESSAGE))
        completion = await client.complete(
            conversation,
            model=opts.model,
            system=opts.prompt if opts.prompt is not None and opts.prompt.strip() else prompt,
            max_tokens=opts.max_tokens,
        )
        if on_completion is not None:
            on_completion(completion)
        return completion.text

    return summarize


__all__ = [
    "DEFAULT_CHAT_TIMEOUT",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_SUMMARY_PROMPT",
    "FOLLOW_UP_MESSAGE",
    "BaseChatClient",
    "ChatClient",
    "check_base_url",
    "check_messages",
    "check_model",
    "check_stop",
    "check_temperature",
    "normalize_finish",
    "object_at",
    "summarize_fn",
    "usage_of",
]
