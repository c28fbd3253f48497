"""Who may talk to a server: the bearer token both HTTP servers ask for, the file that keeps it,
and running an ASGI app on a checked address.

As Jupyter does, a server asks for a token unless told not to (``no_auth``): the caller's, or
one made at start (:func:`new_token`). The token is printed in the URL the user opens, written to
``$COGITATOR_HOME/run/<server>-<port>.token`` (``~/.cogitator/run/`` by default; the folder is
readable only by its owner, the file mode 0600, removed when the server stops), and compared in
constant time on every request (``Authorization: Bearer <token>``). Without a token a server
binds only loopback addresses, and says so with a warning. See ``docs/server.md``.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import string
import sys
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from ..errors import InvalidArgumentError, MissingDriverError
from ..runtime.config import default_home
from .net import is_loopback, listen, resolve, url_host

TOKEN_ENV = "COGITATOR_MEMORY_TOKEN"
"""The environment variable the commands read a token from (safer than ``--token``, which other
users of the machine can see in the process list)."""

SERVE_PORT = 8766
"""The port of the REST server (``cogitator-memory serve``) unless given one."""

MCP_PORT = 8765
"""The port of the MCP server over HTTP (``cogitator-memory mcp --http``) unless given one."""

MIN_TOKEN_LENGTH = 16
"""The shortest token a server takes."""

_TOKEN_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~+/=")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def check_token(token: object) -> str:
    """``token`` when it can be one: a string of at least :data:`MIN_TOKEN_LENGTH` characters
    that a URL and a header carry as they are (letters, digits, ``-._~+/=``)."""
    if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
        raise InvalidArgumentError("token", f"must be a string of at least {MIN_TOKEN_LENGTH} characters")
    if not set(token) <= _TOKEN_CHARACTERS:
        raise InvalidArgumentError("token", "may hold only letters, digits and - . _ ~ + / =")
    return token


def token_from_env(token: str | None) -> str | None:
    """``token`` when given, else ``$COGITATOR_MEMORY_TOKEN`` when set, else ``None``."""
    return token or os.environ.get(TOKEN_ENV) or None


def settle_token(host: str, token: str | None, no_auth: bool) -> str | None:
    """The token a server on ``host`` asks for: ``token`` checked, or a new one; ``None`` with
    ``no_auth``, which only a loopback ``host`` may have (anyone who reaches an open address
    could read and erase the memory)."""
    resolve(host)  # a host that does not resolve is refused before anything is opened
    if no_auth:
        if token is not None:
            raise InvalidArgumentError("token", "cannot be given with no_auth (authentication off)")
        if not is_loopback(host):
            raise InvalidArgumentError(
                "host",
                f"{host} is not loopback (it must resolve to loopback addresses only): without authentication "
                "anyone who reaches the port could read and erase the memory; serve with a token (the default) "
                "or bind 127.0.0.1",
            )
        return None
    return check_token(token) if token is not None else new_token()


def bearer_matches(headers: Mapping[str, str], token: bytes) -> bool:
    """Whether ``headers`` (lower-case names) carry ``Authorization: Bearer <token>``, compared
    in constant time."""
    scheme, _, credential = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(credential.strip().encode(), token)


def unauthorized_body(detail: str = "a bearer token is required") -> bytes:
    """The JSON problem (RFC 9457) a refused request gets."""
    body = {
        "type": "urn:cogitator-memory:error:Unauthorized",
        "title": "Unauthorized",
        "status": 401,
        "detail": detail,
        "error_class": "Unauthorized",
    }
    return json.dumps(body).encode()


async def send_unauthorized(send: Send) -> None:
    """Answer 401 with :func:`unauthorized_body` and ``WWW-Authenticate: Bearer``."""
    body = unauthorized_body()
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """ASGI middleware asking every HTTP request for ``Authorization: Bearer <token>`` (401
    otherwise); lifespan messages pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = check_token(token).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            if not bearer_matches(headers, self.token):
                await send_unauthorized(send)
                return
        await self.app(scope, receive, send)


def token_folder() -> Path:
    """Where servers write their token files: ``run`` in ``$COGITATOR_HOME`` (``~/.cogitator``)."""
    return default_home() / "run"


def write_token_file(name: str, port: int, token: str) -> Path:
    """Write ``token`` to ``<token_folder>/<name>-<port>.token``, readable only by the owner
    (folder 0700, file 0600, created with those modes and moved into place)."""
    folder = token_folder()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_uid == os.getuid():
        folder.chmod(0o700)
    path = folder / f"{name}-{port}.token"
    temporary = folder / f".{name}-{port}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(token + "\n")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


def remove_token_file(path: Path, token: str) -> None:
    """Remove the token file at ``path`` if it still holds ``token`` (another server on the port
    since may have written its own)."""
    try:
        if path.read_text(encoding="ascii").strip() == token:
            path.unlink()
    except OSError:
        pass


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


async def run_app(
    app: ASGIApp,
    *,
    name: str,
    host: str,
    port: int,
    token: str | None,
    path: str = "/",
    token_in_url: bool = True,
    say: Callable[[str], None] | None = None,
) -> None:
    """Serve ``app`` with uvicorn on ``host``:``port`` until cancelled (Ctrl-C).

    The socket is bound to the address that was resolved (and checked by :func:`settle_token`).
    Once the server has started, the token file is written (``name``: ``serve`` or ``mcp``) and
    ``say`` (default: a line on stderr) is told where to go: the URL with ``?token=`` when
    ``token_in_url``, else the header to send; without a token, that with a warning. The file
    goes when the server stops."""
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDriverError("the HTTP servers", "server", "uvicorn") from exc
    tell = say or _say
    sock = listen(host, port)
    bound: int = sock.getsockname()[1]
    url = f"http://{url_host(host)}:{bound}{path}"
    file: Path | None = None

    def started() -> None:
        nonlocal file
        if token is None:
            tell(f"serving the memory at {url} (Ctrl-C stops)")
            tell(
                f"warning: authentication is off (--no-auth): every account and program on this machine that "
                f"reaches port {bound} can read and erase the memory"
            )
            return
        file = write_token_file(name, bound, token)
        if token_in_url:
            tell(f"serving the memory at {url}?token={token} (Ctrl-C stops)")
            tell(f"the token is in {file} (readable only by you); API calls send 'Authorization: Bearer <token>'")
        else:
            tell(f"serving the memory at {url} (Ctrl-C stops); clients send 'Authorization: Bearer {token}'")
            tell(f"the token is in {file} (readable only by you)")

    def stopped() -> None:
        if file is not None and token is not None:
            remove_token_file(file, token)

    class Server(uvicorn.Server):
        # The file is written once uvicorn has taken over SIGINT and SIGTERM, and removed before
        # it raises a caught signal again (which, for SIGTERM, ends the process at once).
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            started()

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            try:
                await super().shutdown(sockets)
            finally:
                stopped()

    try:
        await Server(uvicorn.Config(app, log_level="warning", lifespan="on")).serve(sockets=[sock])
    finally:
        sock.close()
        stopped()


__all__ = [
    "MCP_PORT",
    "MIN_TOKEN_LENGTH",
    "SERVE_PORT",
    "TOKEN_ENV",
    "BearerAuth",
    "bearer_matches",
    "check_token",
    "new_token",
    "remove_token_file",
    "run_app",
    "send_unauthorized",
    "settle_token",
    "token_folder",
    "token_from_env",
    "unauthorized_body",
    "write_token_file",
]
