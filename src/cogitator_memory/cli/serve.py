"""``cogitator-memory serve``: the REST server and the inspector page over the configured memory."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..errors import InvalidArgumentError
from .formats import CliError
from .memory_commands import open_memory, port_number

TOKEN_ENV = "COGITATOR_MEMORY_TOKEN"
"""The environment variable ``serve`` reads its bearer token from (safer than ``--token``,
which other users of the machine can see in the process list)."""

DEFAULT_PORT = 8766


async def cmd_serve(args: argparse.Namespace) -> int:
    """``serve``: the REST API under ``/api`` and the inspector at ``/`` until Ctrl-C."""
    try:
        from ..server.rest import serve
    except ImportError as exc:
        raise CliError(str(exc)) from None
    token = args.token or os.environ.get(TOKEN_ENV) or None
    memory = await open_memory(args)
    try:
        sys.stderr.write(f"serving the memory at http://{args.host}:{args.port}/ (Ctrl-C stops)\n")
        await serve(memory, host=args.host, port=args.port, token=token)
    except InvalidArgumentError as exc:
        raise CliError(str(exc)) from None
    finally:
        await memory.close()
    return 0


def register(sub: Any, db: argparse.ArgumentParser) -> None:
    """Add ``serve`` to the subcommands ``sub`` (``db``: the parent parser holding ``--db``)."""
    serve = sub.add_parser("serve", parents=[db], help="serve the REST API and the memory inspector page")
    serve.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS, help="the cogitator.yml to use")
    serve.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1, loopback)")
    serve.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"the port (default {DEFAULT_PORT})")
    serve.add_argument(
        "--token",
        metavar="TOKEN",
        help=f"a bearer token every /api request must carry (default ${TOKEN_ENV}); required off loopback",
    )
    serve.set_defaults(handler=cmd_serve)


__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "cmd_serve", "register"]
