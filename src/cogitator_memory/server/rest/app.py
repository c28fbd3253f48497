"""The REST app: one :class:`~cogitator_memory.runtime.Memory` behind HTTP, with the inspector page.

:func:`create_app` builds a FastAPI app (``pip install "cogitator-memory[server]"``). What it
guards, and how:

- **Errors** are problem details (``application/problem+json``: ``type``, ``title``, ``status``,
  ``detail``, ``error_class``): bad input 400, unknown ids 404, conflicts 409, a body over
  ``max_body_bytes`` 413, a body that is not JSON 415, a store that went away 503.
- **A bearer token** (``token=``) is asked of every request but :data:`PUBLIC_PATHS` (the liveness
  check, the inspector page's own files and the API's description, which hold no memory) and
  compared in constant time; :func:`~cogitator_memory.server.rest.serve` makes one unless told
  ``no_auth``, and then binds only loopback. The page takes the token from its URL
  (``/?token=...``), keeps it in the tab and sends it as the header.
- **Cross-site requests** cannot change anything: every write takes a JSON body (a form or a
  ``text/plain`` post from another site is refused with 415, and a JSON one needs a preflight
  that this app never answers), and a write whose ``Origin`` is not this server is refused (403).
- **Bodies** are bounded (:data:`MAX_BODY_BYTES` by default), counted as they arrive.
- **Host names**: without a token only requests to loopback names are answered, so a page of
  another site whose name was rebound to this machine (DNS rebinding) gets 403.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ...errors import (
    ConflictError,
    InvalidArgumentError,
    MemoryStoreError,
    MissingDriverError,
    NotFoundError,
    StoreUnavailableError,
)

try:
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as exc:  # pragma: no cover - depends on the install
    raise MissingDriverError("the REST server", "server", "fastapi") from exc

from ..access import ASGIApp, Message, Receive, Scope, Send, bearer_matches, check_token, send_unauthorized
from ..net import LOOPBACK_NAMES, is_loopback

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime.memory import Memory

MAX_BODY_BYTES = 1_048_576
"""The largest request body the app reads (1 MiB); a larger one is answered 413."""

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})

PUBLIC_PATHS = frozenset(
    {
        "/health",
        "/",
        "/inspector/inspector.js",
        "/inspector/user-view.js",
        "/inspector/inspector.css",
        "/openapi.json",
        "/docs",
        "/redoc",
    }
)
"""The paths answered without the token: they hold no memory (``/ready`` does ask for it: its
failures may name the store)."""


def _status_of(exc: BaseException) -> int:
    if isinstance(exc, InvalidArgumentError):
        return 400
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, StoreUnavailableError):
        return 503
    return 500


_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request body too large",
    415: "Unsupported media type",
    500: "Memory operation failed",
    503: "Store unavailable",
}


def problem_body(status: int, detail: str, error_class: str, **extra: Any) -> dict[str, Any]:
    """A problem details body (RFC 9457) naming the failure's class."""
    return {
        "type": f"urn:cogitator-memory:error:{error_class}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "error_class": error_class,
        **extra,
    }


async def _send_problem(send: Send, status: int, detail: str, error_class: str, **headers: str) -> None:
    body = json.dumps(problem_body(status, detail, error_class)).encode()
    raw = [(b"content-type", b"application/problem+json"), (b"content-length", str(len(body)).encode())]
    raw.extend((k.encode(), v.encode()) for k, v in headers.items())
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """The ASGI guard in front of the app: token, cross-site writes, JSON bodies, body size."""

    def __init__(
        self, app: ASGIApp, *, token: str | None, max_body_bytes: int, allowed_hosts: frozenset[str] | None
    ) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path: str = scope.get("path", "")
        method: str = scope.get("method", "GET")
        if self.allowed_hosts is not None and _host_name(headers.get("host", "")) not in self.allowed_hosts:
            # Without a token, a page of another site whose name was made to point at this
            # machine (DNS rebinding) would be "same origin": only loopback names are answered.
            await _send_problem(send, 403, "this server answers only requests to its loopback names", "Forbidden")
            return
        if self.token is not None and path not in PUBLIC_PATHS and not bearer_matches(headers, self.token):
            await send_unauthorized(send)
            return
        if method in _WRITES:
            origin = headers.get("origin")
            if origin is not None and not _same_origin(origin, headers.get("host", ""), scope):
                await _send_problem(send, 403, f"cross-site write refused (Origin {origin})", "Forbidden")
                return
            length = headers.get("content-length")
            has_body = (length is not None and length.strip() not in ("", "0")) or "transfer-encoding" in headers
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if has_body and kind != "application/json":
                await _send_problem(
                    send, 415, f"the body must be application/json, got {kind or 'no content type'}", "UnsupportedMedia"
                )
                return
            if length is not None and length.strip().isdigit() and int(length) > self.max_body_bytes:
                await _send_problem(
                    send, 413, f"the body is {int(length)} bytes; the limit is {self.max_body_bytes}", "BodyTooLarge"
                )
                return
        received = 0

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    # Raised inside the app, this becomes a 413 problem (see ``on_http``).
                    raise StarletteHTTPException(413, f"the body is over the limit of {self.max_body_bytes} bytes")
            return message

        await self.app(scope, counted_receive, send)


def _same_origin(origin: str, host: str, scope: Scope) -> bool:
    parts = urlsplit(origin)
    if not parts.netloc:
        return False
    if host and parts.netloc.lower() == host.lower():
        return True
    server = scope.get("server")
    if server:
        name, port = server
        return parts.netloc.lower() in (f"{name}:{port}", f"[{name}]:{port}")
    return False


def _host_name(host: str) -> str:
    """The name of a ``Host`` header, without its port (``[::1]:8766`` -> ``[::1]``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def inspector_asset(name: str) -> bytes:
    """A file of the inspector page, read from the package."""
    return resources.files("cogitator_memory.server.rest").joinpath("inspector", name).read_bytes()


def create_app(
    memory: Memory,
    *,
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    inspector: bool = True,
    allowed_hosts: Sequence[str] | None = None,
) -> FastAPI:
    """The REST app over ``memory`` (connected by the caller, or on the app's startup when not).

    ``token``: a bearer token every request but :data:`PUBLIC_PATHS` must carry; without one the
    app answers anyone who reaches it (:func:`~cogitator_memory.server.rest.serve` makes one
    unless told ``no_auth``). ``max_body_bytes``: the largest body read. ``inspector``: serve the
    inspector page at ``/``. ``allowed_hosts``: the names a request's ``Host`` may carry; by
    default, without a token, only loopback names (``localhost``, ``127.0.0.1``, ``[::1]``), so a
    page of another site rebound to this machine is refused; with a token, any. See the module
    docstring for what the app refuses, and ``docs/server.md`` for the routes.
    """
    if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
        raise InvalidArgumentError("max_body_bytes", f"must be a positive integer, got {max_body_bytes!r}")
    if token is not None:
        check_token(token)

    from .routes_memory import memory_router
    from .routes_threads import threads_router
    from .routes_users import users_router

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        opened_here = not getattr(memory, "_connected", False)
        if opened_here:
            await memory.connect()
        try:
            yield
        finally:
            if opened_here:
                await memory.close()

    app = FastAPI(
        title="cogitator-memory",
        summary="What an agent remembers: threads, memory items, files, search and forgetting.",
        lifespan=lifespan,
    )
    app.state.memory = memory

    def problem(status: int, detail: str, error_class: str, **extra: Any) -> JSONResponse:
        return JSONResponse(
            problem_body(status, detail, error_class, **extra),
            status_code=status,
            media_type="application/problem+json",
        )

    @app.exception_handler(MemoryStoreError)
    async def on_memory_error(_: Request, exc: MemoryStoreError) -> JSONResponse:
        status = _status_of(exc)
        argument = getattr(exc, "argument", None)
        extra = {"argument": argument} if argument is not None else {}
        return problem(status, str(exc), type(exc).__name__, **extra)

    @app.exception_handler(RequestValidationError)
    async def on_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"where": ".".join(str(p) for p in e.get("loc", ())), "problem": str(e.get("msg", ""))}
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"where": "request", "problem": "invalid"}
        detail = f"invalid argument '{first['where']}': {first['problem']}"
        return problem(400, detail, "InvalidArgumentError", errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def on_http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        name = {404: "NotFoundError", 405: "MethodNotAllowed", 413: "BodyTooLarge"}.get(exc.status_code, "HTTPError")
        return problem(exc.status_code, str(exc.detail), name)

    @app.get("/health", tags=["health"])
    async def health() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.get("/ready", tags=["health"])
    async def ready() -> JSONResponse:
        """Whether each part can serve: the thread store is asked; parts without a check report
        ``unchecked``."""
        checks: dict[str, str] = {}
        result = await memory.adapter.health_check()
        checks["store"] = "ok" if result.success else f"failed: {result.error}"
        for name, part in (("vectors", memory.vectors), ("embeddings", memory.embedding_service)):
            if part is None:
                continue
            check = getattr(part, "health_check", None)
            if check is None:
                checks[name] = "unchecked"
                continue
            answer = await check()
            good = getattr(answer, "success", True)
            checks[name] = "ok" if good else f"failed: {getattr(answer, 'error', answer)}"
        ready_now = all(v in ("ok", "unchecked") for v in checks.values()) and memory.enabled
        return JSONResponse(
            {"status": "ready" if ready_now else "unavailable", "checks": checks}, 200 if ready_now else 503
        )

    app.include_router(threads_router(), prefix="/api")
    app.include_router(users_router(), prefix="/api")
    app.include_router(memory_router(), prefix="/api")

    if inspector:
        kinds = {".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css"}
        # The page runs only its own script and styles: stored text can never run as code.
        policy = (
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:;"
            " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        )

        def asset(name: str) -> Response:
            suffix = name[name.rfind(".") :]
            return Response(
                inspector_asset(name),
                media_type=kinds[suffix],
                headers={
                    "content-security-policy": policy,
                    "x-content-type-options": "nosniff",
                    # The page's URL may carry the token: it is never sent on as a referrer.
                    "referrer-policy": "no-referrer",
                },
            )

        @app.get("/", include_in_schema=False)
        async def page() -> Response:
            return asset("index.html")

        @app.get("/inspector/{name}", include_in_schema=False)
        async def page_asset(name: str) -> Response:
            if name not in ("inspector.js", "user-view.js", "inspector.css"):
                return problem(404, f"no inspector file {name!r}", "NotFoundError")
            return asset(name)

    if allowed_hosts is not None:
        if isinstance(allowed_hosts, str) or not all(isinstance(h, str) and h for h in allowed_hosts):
            raise InvalidArgumentError("allowed_hosts", "must be a list of host names")
        hosts: frozenset[str] | None = frozenset(_host_name(h) for h in allowed_hosts)
    else:
        hosts = None if token else LOOPBACK_NAMES
    app.add_middleware(GuardMiddleware, token=token, max_body_bytes=max_body_bytes, allowed_hosts=hosts)
    return app


__all__ = [
    "MAX_BODY_BYTES",
    "PUBLIC_PATHS",
    "GuardMiddleware",
    "create_app",
    "inspector_asset",
    "is_loopback",
    "problem_body",
]
