"""``ScriptedServer``: a real HTTP server on 127.0.0.1 that answers from a script, for offline tests.

It listens on a free loopback port in a background thread, so sync and async clients alike talk
to it over real HTTP. Each path has a queue of answers (status, headers, a JSON or raw body, an
optional delay, or a dropped connection); when a path's queue is empty its fallback answers, and
without one the server answers 404 naming the path. Every request is recorded (method, path,
query, headers, body) for the test to inspect.

Fallbacks that speak the embedding APIs of OpenAI, Ollama and Google with deterministic
vectors (:class:`~cogitator_memory.embeddings.HashingEmbedder`) come with it, so code that embeds
can be tested without a network::

    with ScriptedServer() as server:
        server.fallback("/v1/embeddings", openai_embeddings_handler(dimensions=8))
        server.enqueue("/v1/embeddings", status=429, headers={"Retry-After": "0"})
        service = OpenAIEmbeddingService(base_url=server.url + "/v1", model="m", dimensions=8)
        ...
"""

from __future__ import annotations

import contextlib
import json as jsonlib
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidArgumentError


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return jsonlib.loads(self.body)

    def header(self, name: str) -> str | None:
        """A header's value by case-insensitive name, or ``None``."""
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class ScriptedResponse:
    """One scripted answer.

    ``json`` is sent as ``application/json``; ``body`` (bytes or text) is sent as is, for
    malformed answers. ``delay`` seconds pass before the answer (a client timeout test);
    ``drop`` closes the connection without answering (a connection error).
    """

    status: int = 200
    json: Any = None
    body: bytes | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False


Handler = Callable[[RecordedRequest], ScriptedResponse]
"""A function that makes the answer to a request (a path's fallback, or a queued item)."""


class ScriptedServer:
    """A threaded HTTP/1.1 server on ``127.0.0.1`` and a free port, answering from scripts.

    Use it as a context manager (sync or async) or call :meth:`start` and :meth:`close`.
    ``url`` is ``http://127.0.0.1:PORT``; ``requests`` lists what it received, in order.
    """

    def __init__(self) -> None:
        self._queues: dict[str, deque[ScriptedResponse | Handler]] = {}
        self._fallbacks: dict[str, Handler] = {}
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------------

    def enqueue(
        self,
        path: str,
        response: ScriptedResponse | Handler | None = None,
        *,
        status: int = 200,
        json: Any = None,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
        drop: bool = False,
    ) -> None:
        """Queue one answer for ``path``: a ``ScriptedResponse``, a handler, or the fields of one."""
        if not path.startswith("/"):
            raise InvalidArgumentError("path", f"must start with '/', got {path!r}")
        item = response or ScriptedResponse(status, json, body, dict(headers or {}), delay, drop)
        with self._lock:
            self._queues.setdefault(path, deque()).append(item)

    def fallback(self, path: str, handler: Handler) -> None:
        """Answer ``path`` with ``handler`` whenever its queue is empty."""
        if not path.startswith("/"):
            raise InvalidArgumentError("path", f"must start with '/', got {path!r}")
        with self._lock:
            self._fallbacks[path] = handler

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests received so far."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """The requests received for ``path``."""
        return [r for r in self.requests if r.path == path]

    def pending(self, path: str) -> int:
        """How many queued answers for ``path`` are still unused."""
        with self._lock:
            return len(self._queues.get(path, ()))

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("ScriptedServer is not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> ScriptedServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        server = self

        class _Handler(_RequestHandler):
            owner = server

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-server", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port; answers still waiting on a delay are abandoned."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._closing.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> ScriptedServer:
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    # -- serving -------------------------------------------------------------------------

    def _answer(self, request: RecordedRequest) -> ScriptedResponse:
        with self._lock:
            self._requests.append(request)
            queue = self._queues.get(request.path)
            item: ScriptedResponse | Handler | None = queue.popleft() if queue else None
            if item is None:
                item = self._fallbacks.get(request.path)
        if item is None:
            return ScriptedResponse(
                404, {"error": {"message": f"no scripted answer for {request.method} {request.path}"}}
            )
        if isinstance(item, ScriptedResponse):
            return item
        try:
            return item(request)
        except Exception as exc:
            return ScriptedResponse(500, {"error": {"message": f"handler failed: {type(exc).__name__}: {exc}"}})


class _RequestHandler(BaseHTTPRequestHandler):
    owner: ScriptedServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        request = RecordedRequest(
            method=self.command,
            path=parts.path,
            query=parts.query,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        answer = self.owner._answer(request)
        if answer.delay and self.owner._closing.wait(answer.delay):
            self.close_connection = True
            return
        if answer.drop:
            self.close_connection = True
            return
        if answer.body is not None:
            payload = answer.body.encode() if isinstance(answer.body, str) else answer.body
            content_type = "text/plain; charset=utf-8"
        elif answer.json is not None:
            payload = jsonlib.dumps(answer.json).encode()
            content_type = "application/json"
        else:
            payload = b""
            content_type = "application/json"
        try:
            self.send_response(answer.status)
            names = {k.lower() for k in answer.headers}
            if "content-type" not in names:
                self.send_header("Content-Type", content_type)
            for key, value in answer.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

    def handle(self) -> None:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
            super().handle()


def _texts_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ValueError("input must be a string or a list of strings")


def _bad_request(message: str) -> ScriptedResponse:
    return ScriptedResponse(400, {"error": {"message": message}})


def openai_embeddings_handler(dimensions: int = 8) -> Handler:
    """A fallback that answers OpenAI ``/v1/embeddings`` requests with hashing vectors.

    Honours the ``dimensions`` field of the request when present; answers 400 for an empty input.
    """
    from ..embeddings.hashing import HashingEmbedder

    def handle(request: RecordedRequest) -> ScriptedResponse:
        payload = request.json()
        try:
            texts = _texts_of(payload.get("input"))
        except ValueError as exc:
            return _bad_request(str(exc))
        if any(not t for t in texts):
            return _bad_request("'$.input' is invalid: empty strings are not allowed")
        embedder = HashingEmbedder(int(payload.get("dimensions") or dimensions))
        data = [{"object": "embedding", "index": i, "embedding": embedder.vector(t)} for i, t in enumerate(texts)]
        usage = {
            "prompt_tokens": sum(len(t.split()) for t in texts),
            "total_tokens": sum(len(t.split()) for t in texts),
        }
        return ScriptedResponse(200, {"object": "list", "data": data, "model": payload.get("model"), "usage": usage})

    return handle


def ollama_embed_handler(dimensions: int = 8) -> Handler:
    """A fallback that answers Ollama ``/api/embed`` requests with hashing vectors."""
    from ..embeddings.hashing import HashingEmbedder

    embedder = HashingEmbedder(dimensions)

    def handle(request: RecordedRequest) -> ScriptedResponse:
        payload = request.json()
        try:
            texts = _texts_of(payload.get("input"))
        except ValueError as exc:
            return _bad_request(str(exc))
        return ScriptedResponse(
            200, {"model": payload.get("model"), "embeddings": [embedder.vector(t or " ") for t in texts]}
        )

    return handle


def google_batch_embed_handler(dimensions: int = 8, api_key: str | None = None) -> Handler:
    """A fallback that answers Gemini ``models/{model}:batchEmbedContents`` with hashing vectors.

    With ``api_key`` set, a request whose ``x-goog-api-key`` differs gets 400 as Google answers.
    """
    from ..embeddings.hashing import HashingEmbedder

    def handle(request: RecordedRequest) -> ScriptedResponse:
        if api_key is not None and request.header("x-goog-api-key") != api_key:
            return _bad_request("API key not valid. Please pass a valid API key.")
        payload = request.json()
        out = []
        for item in payload.get("requests", []):
            text = "".join(part.get("text", "") for part in item["content"]["parts"])
            size = int(item.get("outputDimensionality") or dimensions)
            out.append({"values": HashingEmbedder(size).vector(text or " ")})
        return ScriptedResponse(200, {"embeddings": out})

    return handle


# -- chat model fallbacks -------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptedChatRequest:
    """A chat request as the chat fallbacks read it, the same for every provider.

    ``provider`` is ``"openai"``, ``"anthropic"`` or ``"google"``; ``system`` the system text
    (its parts joined by blank lines); ``messages`` the conversation as ``(role, text)`` pairs
    with roles ``user``, ``assistant`` and ``tool``; ``max_tokens`` the answer limit the request
    asked for; ``body`` the request's JSON as sent.
    """

    provider: str
    model: str | None
    system: str
    messages: list[tuple[str, str]]
    max_tokens: int | None
    stop: list[str]
    body: dict[str, Any]

    @property
    def last_user_text(self) -> str:
        """The text of the last user message ("" when there is none)."""
        return next((text for role, text in reversed(self.messages) if role == "user"), "")


ChatAnswer = Callable[[ScriptedChatRequest], str]
"""Makes the text a chat fallback answers with."""


def _part_texts(parts: Any, key: str = "text") -> str:
    if isinstance(parts, str):
        return parts
    if not isinstance(parts, list):
        return ""
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get(key), str):
                texts.append(part[key])
            elif isinstance(part.get("content"), str | list):  # Anthropic tool_result
                texts.append(_part_texts(part["content"]))
            elif isinstance(part.get("functionResponse"), dict):
                texts.append(jsonlib.dumps(part["functionResponse"].get("response")))
    return "\n".join(texts)


def _scripted_answer(answer: ChatAnswer | str, chat: ScriptedChatRequest) -> tuple[str, str, int, int]:
    """(text, "stop" | "stop_sequence" | "length", input tokens, output tokens) of an answer.

    The text is cut at the first stop sequence it holds, then at ``max_tokens`` tokens (the
    package's estimate, :func:`~cogitator_memory.tokens.count_tokens`), as a model would stop.
    """
    from ..tokens import count_tokens, truncate_to_tokens

    text = answer if isinstance(answer, str) else answer(chat)
    if not isinstance(text, str):
        raise TypeError(f"the answer function returned {type(text).__name__}, not a string")
    why = "stop"
    for stop in chat.stop:
        at = text.find(stop)
        if at != -1:
            text, why = text[:at], "stop_sequence"
    if chat.max_tokens is not None and count_tokens(text) > chat.max_tokens:
        text, why = truncate_to_tokens(text, chat.max_tokens), "length"
    prompt = count_tokens(chat.system) + sum(count_tokens(t) + 4 for _, t in chat.messages)
    return text, why, prompt, count_tokens(text)


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def openai_chat_handler(answer: ChatAnswer | str, *, api_key: str | None = None) -> Handler:
    """A fallback that answers OpenAI ``/v1/chat/completions`` requests like the API does.

    ``answer`` is the text, or a function of the :class:`ScriptedChatRequest` that makes it. The
    text is cut at the request's ``max_completion_tokens`` (or ``max_tokens``) with
    ``finish_reason: "length"``, and at a ``stop`` sequence. With ``api_key`` set, a request
    without ``Authorization: Bearer <api_key>`` gets OpenAI's 401.
    """

    def handle(request: RecordedRequest) -> ScriptedResponse:
        if api_key is not None and request.header("authorization") != f"Bearer {api_key}":
            return ScriptedResponse(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                    }
                },
            )
        payload = request.json()
        messages = payload.get("messages")
        if not isinstance(payload.get("model"), str) or not isinstance(messages, list) or not messages:
            return _bad_request("'model' and a non-empty 'messages' list are required")
        system = [_part_texts(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
        turns = [
            (m["role"], _part_texts(m.get("content"))) for m in messages if m.get("role") not in ("system", "developer")
        ]
        stop = payload.get("stop") or []
        chat = ScriptedChatRequest(
            provider="openai",
            model=payload["model"],
            system="\n\n".join(system),
            messages=turns,
            max_tokens=_positive_int(payload.get("max_completion_tokens")) or _positive_int(payload.get("max_tokens")),
            stop=[stop] if isinstance(stop, str) else list(stop),
            body=payload,
        )
        text, why, used_in, used_out = _scripted_answer(answer, chat)
        return ScriptedResponse(
            200,
            {
                "id": f"chatcmpl-scripted-{len(text)}",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": payload["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "length" if why == "length" else "stop",
                    }
                ],
                "usage": {"prompt_tokens": used_in, "completion_tokens": used_out, "total_tokens": used_in + used_out},
            },
        )

    return handle


def _anthropic_error(status: int, kind: str, message: str) -> ScriptedResponse:
    return ScriptedResponse(status, {"type": "error", "error": {"type": kind, "message": message}})


def anthropic_messages_handler(answer: ChatAnswer | str, *, api_key: str | None = None) -> Handler:
    """A fallback that answers Anthropic ``/v1/messages`` requests like the API does.

    It wants ``anthropic-version`` and ``max_tokens`` (400 without them, as Anthropic answers),
    and with ``api_key`` set that key as ``x-api-key`` or a bearer token (else 401). The text is cut at
    ``max_tokens`` with ``stop_reason: "max_tokens"``, and at ``stop_sequences``.
    """

    def handle(request: RecordedRequest) -> ScriptedResponse:
        if api_key is not None:
            given = request.header("x-api-key")  # the API reads x-api-key first, then a bearer token
            bearer = request.header("authorization") or ""
            if (given if given is not None else bearer.removeprefix("Bearer ")) != api_key:
                return _anthropic_error(401, "authentication_error", "invalid x-api-key")
        if not request.header("anthropic-version"):
            return _anthropic_error(400, "invalid_request_error", "anthropic-version: header is required")
        payload = request.json()
        if _positive_int(payload.get("max_tokens")) is None:
            return _anthropic_error(400, "invalid_request_error", "max_tokens: Field required")
        messages = payload.get("messages")
        if not isinstance(messages, list) or not messages:
            return _anthropic_error(400, "invalid_request_error", "messages: at least one message is required")
        for i in range(1, len(messages)):
            if messages[i].get("role") == messages[i - 1].get("role"):
                return _anthropic_error(400, "invalid_request_error", "messages: roles must alternate")
        system = payload.get("system")
        chat = ScriptedChatRequest(
            provider="anthropic",
            model=payload.get("model"),
            system="\n\n".join(_part_texts([b]) for b in system) if isinstance(system, list) else str(system or ""),
            messages=[(m["role"], _part_texts(m.get("content"))) for m in messages],
            max_tokens=payload["max_tokens"],
            stop=list(payload.get("stop_sequences") or []),
            body=payload,
        )
        text, why, used_in, used_out = _scripted_answer(answer, chat)
        return ScriptedResponse(
            200,
            {
                "id": f"msg_scripted{len(text)}",
                "type": "message",
                "role": "assistant",
                "model": payload.get("model"),
                "content": [{"type": "text", "text": text}],
                "stop_reason": {"length": "max_tokens", "stop_sequence": "stop_sequence"}.get(why, "end_turn"),
                "stop_sequence": None,
                "usage": {
                    "input_tokens": used_in,
                    "output_tokens": used_out,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
            },
        )

    return handle


def gemini_generate_handler(answer: ChatAnswer | str, *, api_key: str | None = None) -> Handler:
    """A fallback that answers Gemini ``models/{model}:generateContent`` requests like the API does.

    Register it for the model's path (``/v1beta/models/gemini-2.5-flash:generateContent``). With
    ``api_key`` set, a request whose ``x-goog-api-key`` differs gets Google's 400. The text is cut
    at ``generationConfig.maxOutputTokens`` with ``finishReason: "MAX_TOKENS"``, and at
    ``stopSequences``.
    """

    def handle(request: RecordedRequest) -> ScriptedResponse:
        if api_key is not None and request.header("x-goog-api-key") != api_key:
            return ScriptedResponse(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": "API key not valid. Please pass a valid API key.",
                        "status": "INVALID_ARGUMENT",
                    }
                },
            )
        payload = request.json()
        contents = payload.get("contents")
        if not isinstance(contents, list) or not contents:
            return ScriptedResponse(
                400, {"error": {"code": 400, "message": "contents is not specified", "status": "INVALID_ARGUMENT"}}
            )
        model = request.path.rsplit("/", 1)[-1].split(":", 1)[0]
        config = payload.get("generationConfig") or {}
        instruction = payload.get("systemInstruction") or {}
        chat = ScriptedChatRequest(
            provider="google",
            model=model,
            system="\n\n".join(p["text"] for p in instruction.get("parts", []) if isinstance(p.get("text"), str)),
            messages=[
                ("assistant" if c.get("role") == "model" else "user", _part_texts(c.get("parts"))) for c in contents
            ],
            max_tokens=_positive_int(config.get("maxOutputTokens")),
            stop=list(config.get("stopSequences") or []),
            body=payload,
        )
        text, why, used_in, used_out = _scripted_answer(answer, chat)
        return ScriptedResponse(
            200,
            {
                "candidates": [
                    {
                        "content": {"parts": [{"text": text}], "role": "model"},
                        "finishReason": "MAX_TOKENS" if why == "length" else "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": used_in,
                    "candidatesTokenCount": used_out,
                    "totalTokenCount": used_in + used_out,
                },
                "modelVersion": model,
                "responseId": f"scripted-{len(text)}",
            },
        )

    return handle


__all__ = [
    "ChatAnswer",
    "Handler",
    "RecordedRequest",
    "ScriptedChatRequest",
    "ScriptedResponse",
    "ScriptedServer",
    "anthropic_messages_handler",
    "gemini_generate_handler",
    "google_batch_embed_handler",
    "ollama_embed_handler",
    "openai_chat_handler",
    "openai_embeddings_handler",
]


# --- rerank APIs (appended) -----------------------------------------------------------------------


def _overlap_scores(query: str, documents: list[str]) -> list[float]:
    """A deterministic relevance: the share of the query's words a document holds, plus a
    tenth of the document's share of words in the query (so ties break toward focused texts)."""
    from ..search.tokenizer import index_terms

    asked = set(index_terms(query))
    scores: list[float] = []
    for doc in documents:
        words = index_terms(doc)
        held = asked.intersection(words)
        share = len(held) / len(asked) if asked else 0.0
        focus = sum(1 for w in words if w in asked) / len(words) if words else 0.0
        scores.append(round(share + 0.1 * focus, 6))
    return scores


def _rerank_handler(
    provider: str, list_key: str, limit_key: str, api_key: str | None, scores: Callable[[str, list[str]], list[float]]
) -> Handler:
    def handle(request: RecordedRequest) -> ScriptedResponse:
        if api_key is not None and request.header("authorization") != f"Bearer {api_key}":
            return ScriptedResponse(
                401, {"message": "invalid api token"} if provider == "cohere" else {"detail": "Unauthorized"}
            )
        try:
            payload = request.json()
        except ValueError:
            return _bad_request("body is not JSON")
        query = payload.get("query") if isinstance(payload, dict) else None
        documents = payload.get("documents") if isinstance(payload, dict) else None
        if not isinstance(query, str) or not query:
            return _bad_request("query is required")
        if not isinstance(documents, list) or not documents or not all(isinstance(d, str) for d in documents):
            return _bad_request("documents must be a non-empty list of strings")
        if not isinstance(payload.get("model"), str):
            return _bad_request("model is required")
        values = scores(query, documents)
        order = sorted(range(len(documents)), key=lambda i: (-values[i], i))
        limit = payload.get(limit_key)
        if isinstance(limit, int) and limit > 0:
            order = order[:limit]
        rows = [{"index": i, "relevance_score": values[i]} for i in order]
        if provider == "cohere":
            body: dict[str, Any] = {"id": "scripted", "results": rows, "meta": {"billed_units": {"search_units": 1}}}
        elif provider == "jina":
            body = {"model": payload["model"], "usage": {"total_tokens": 10}, "results": rows}
        else:
            body = {"object": "list", "data": rows, "model": payload["model"], "usage": {"total_tokens": 10}}
        return ScriptedResponse(200, body)

    return handle


def cohere_rerank_handler(
    api_key: str | None = None, scores: Callable[[str, list[str]], list[float]] = _overlap_scores
) -> Handler:
    """A fallback that answers Cohere ``POST /v2/rerank`` like the API: ``results`` best first,
    each ``{index, relevance_score}``, cut at ``top_n``. ``scores(query, documents)`` gives the
    relevance (default: the share of the query's words a document holds); with ``api_key`` a
    request without that bearer token gets a 401."""
    return _rerank_handler("cohere", "results", "top_n", api_key, scores)


def jina_rerank_handler(
    api_key: str | None = None, scores: Callable[[str, list[str]], list[float]] = _overlap_scores
) -> Handler:
    """A fallback that answers Jina ``POST /v1/rerank`` like the API (``results``, ``top_n``)."""
    return _rerank_handler("jina", "results", "top_n", api_key, scores)


def voyage_rerank_handler(
    api_key: str | None = None, scores: Callable[[str, list[str]], list[float]] = _overlap_scores
) -> Handler:
    """A fallback that answers Voyage ``POST /v1/rerank`` like the API (``data``, ``top_k``)."""
    return _rerank_handler("voyage", "data", "top_k", api_key, scores)


__all__ += ["cohere_rerank_handler", "jina_rerank_handler", "voyage_rerank_handler"]
