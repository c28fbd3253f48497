"""``cogitator-memory serve``: the REST server and the inspector page over the configured memory
(the flags both HTTP servers take for their token are in :mod:`.auth`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InvalidArgumentError
from ..server.access import SERVE_PORT, TOKEN_ENV
from .auth import auth_flags, token_of
from .formats import CliError
from .memory_commands import config_flag, open_memory, port_number

DEFAULT_PORT = SERVE_PORT


async def cmd_serve(args: argparse.Namespace) -> int:
    """``serve``: the REST API under ``/api`` and the inspector at ``/`` until Ctrl-C."""
    try:
        from ..server.rest import serve
    except ImportError as exc:
        raise CliError(str(exc)) from None
    token = token_of(args)
    memory = await open_memory(args)
    try:
        await serve(memory, host=args.host, port=args.port, token=token, no_auth=args.no_auth)
    except InvalidArgumentError as exc:
        raise CliError(str(exc)) from None
    finally:
        await memory.close()
    return 0


def register(sub: Any, db: argparse.ArgumentParser) -> None:
    """Add ``serve`` to the subcommands ``sub`` (``db``: the parent parser holding ``--db``)."""
    serve = sub.add_parser("serve", parents=[db], help="serve the REST API and the memory inspector page")
    config_flag(serve)
    serve.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1, loopback)")
    serve.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})")
    auth_flags(serve)
    serve.set_defaults(handler=cmd_serve)


__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "auth_flags", "cmd_serve", "register", "token_of"]
