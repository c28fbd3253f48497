"""``cogitator-memory serve``: the REST server and the inspector page over the configured memory;
and the flags both HTTP servers (``serve``, ``mcp --http``) take for their token."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InvalidArgumentError
from ..server.access import SERVE_PORT, TOKEN_ENV, settle_token, token_from_env
from .formats import CliError
from .memory_commands import config_flag, open_memory, port_number

DEFAULT_PORT = SERVE_PORT


def auth_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--token`` and ``--no-auth`` (the HTTP servers' authentication) to ``parser``."""
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help=(
            f"the bearer token every request must carry (default ${TOKEN_ENV}, which other users cannot "
            "see in the process list; else one is made and printed)"
        ),
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="ask no token (loopback only; anyone on this machine can then read and erase the memory)",
    )


def token_of(args: argparse.Namespace) -> str | None:
    """The token the server of a command asks for, settled before anything is opened:
    ``--token``, else ``$COGITATOR_MEMORY_TOKEN``, else a new one; none with ``--no-auth``
    (refused off loopback, and with ``--token``)."""
    if args.no_auth and args.token:
        raise CliError("invalid argument 'token': cannot be given with --no-auth")
    try:
        return settle_token(args.host, None if args.no_auth else token_from_env(args.token), args.no_auth)
    except InvalidArgumentError as exc:
        raise CliError(str(exc)) from None


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
