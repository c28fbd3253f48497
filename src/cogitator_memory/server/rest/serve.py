"""Run the REST app with uvicorn: :func:`serve`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..access import SERVE_PORT, run_app, settle_token
from ..net import LOOPBACK_NAMES, url_host
from .app import MAX_BODY_BYTES, create_app

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime.memory import Memory

DEFAULT_PORT = SERVE_PORT
"""The port :func:`serve` and ``cogitator-memory serve`` listen on unless given one."""


async def serve(
    memory: Memory,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    no_auth: bool = False,
    max_body_bytes: int = MAX_BODY_BYTES,
    inspector: bool = True,
    say: Callable[[str], None] | None = None,
) -> None:
    """Serve ``memory`` over HTTP until cancelled (Ctrl-C).

    Every request but the liveness check and the page's own files must carry ``token`` (one is
    made when none is given), printed in the URL to open and written to a file only the owner can
    read (see :mod:`cogitator_memory.server.access`). ``no_auth=True`` turns that off, with a
    warning, and only on a loopback ``host`` (one that resolves only to loopback addresses).
    ``say`` gets the lines telling where to go (default: stderr)."""
    token = settle_token(host, token, no_auth)
    # Without a token the app answers only the loopback names, and the name it was started on.
    hosts = None if token is not None else sorted(LOOPBACK_NAMES | {url_host(host).lower()})
    app = create_app(memory, token=token, max_body_bytes=max_body_bytes, inspector=inspector, allowed_hosts=hosts)
    await run_app(app, name="serve", host=host, port=port, token=token, say=say)


__all__ = ["DEFAULT_PORT", "serve"]
