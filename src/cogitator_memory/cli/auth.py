"""The flags both HTTP servers of the command line (``serve``, ``mcp --http``) take for their
token, and the token they settle on. Its own module so that :mod:`.serve` and
:mod:`.memory_commands` both use it without importing each other."""

from __future__ import annotations

import argparse

from ..errors import InvalidArgumentError
from ..server.access import TOKEN_ENV, settle_token, token_from_env
from .formats import CliError


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


__all__ = ["auth_flags", "token_of"]
