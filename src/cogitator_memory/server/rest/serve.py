"""Run the REST app with uvicorn: :func:`serve`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import InvalidArgumentError, MissingDriverError
from ..net import is_loopback
from .app import MAX_BODY_BYTES, create_app

if TYPE_CHECKING:  # pragma: no cover
    from ...runtime.memory import Memory


async def serve(
    memory: Memory,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    inspector: bool = True,
) -> None:
    """Serve ``memory`` over HTTP until cancelled (Ctrl-C). Binding an address other than
    loopback without ``token`` is refused: anyone who can reach the port could read and forget
    everything."""
    if not isinstance(host, str) or not host:
        raise InvalidArgumentError("host", "must be an address to bind")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidArgumentError("port", f"must be a port number, got {port!r}")
    if not is_loopback(host) and not token:
        raise InvalidArgumentError("token", f"is required to serve on {host} (not loopback): pass a bearer token")
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingDriverError("the REST server", "server", "uvicorn") from exc
    app = create_app(memory, token=token, max_body_bytes=max_body_bytes, inspector=inspector)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


__all__ = ["serve"]
