"""Which store a command of ``cogitator-memory`` works on: one rule for every command.

Every command (``demo``, ``threads``, ``show``, ``import``, ``export``, ``forget``, ``search``,
``recall``, ``remember``, ``facts``, ``mcp``, ``serve``, ``reindex``) resolves its store here,
in this order:

1. ``--db PATH``: the SQLite file PATH;
2. ``--config FILE``: the store that config's ``memory`` section names, any engine;
3. ``$COGITATOR_MEMORY_DB``: a SQLite file;
4. ``$COGITATOR_CONFIG``, else ``./cogitator.yml``: the store that config names;
5. SQLite at ``~/.cogitator/memory.db`` (``$COGITATOR_HOME`` moves the folder).

3 to 5 are :func:`~cogitator_memory.runtime.config.default_config`, the store
:class:`~cogitator_memory.runtime.Memory` opens with no config: a program and the commands see
the same store.

The default is a fixed file in the home folder, not one in the current folder, so that a
program started from anywhere (Claude Desktop starting ``cogitator-memory mcp``, a ``serve``
started from another folder) finds what ``demo``, ``import`` or ``remember`` wrote. The other
settings (the embedder, the agent, the graph) come from the config found as in 2 and 4 in every
case.
"""

from __future__ import annotations

import argparse

from ..errors import InvalidArgumentError
from ..runtime.config import DB_ENV, MemoryConfig, default_config, find_config_file, load_config, on_sqlite_file
from .formats import CliError

#: How every ``--help`` names the store a command works on when nothing names one.
DEFAULT_STORE = (
    f"${DB_ENV}, else the store of $COGITATOR_CONFIG or ./cogitator.yml, else SQLite at ~/.cogitator/memory.db"
)
#: The help of ``--db``, the same in every command.
DB_HELP = f"the SQLite file to work on (default: {DEFAULT_STORE})"
#: The help of ``--config``, the same in every command.
CONFIG_HELP = (
    "the cogitator.yml whose 'memory' section names the store (any engine) and its settings "
    f"(default: $COGITATOR_CONFIG, else ./cogitator.yml; the store when neither --db nor --config: {DEFAULT_STORE})"
)


def add_db_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--db PATH`` to ``parser`` (a parent parser of the commands, or the top parser)."""
    parser.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS, help=DB_HELP)


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--config FILE`` to ``parser``."""
    parser.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS, help=CONFIG_HELP)


def command_config(args: argparse.Namespace) -> MemoryConfig:
    """The memory config of a command, its store resolved by the rule of the module docs. A bad
    config file is a :class:`CliError` naming the key and line."""
    named = getattr(args, "config", None)
    try:
        # without --config: the rule Memory() follows too (runtime.config.default_config)
        config = load_config(named) if named else default_config()
    except InvalidArgumentError as exc:
        raise CliError(str(exc)) from None
    db = getattr(args, "db", None)
    return on_sqlite_file(config, db) if db else config


def store_label(args: argparse.Namespace, config: MemoryConfig | None = None) -> str:
    """How messages name a command's store: the SQLite file, or the engine and the config file
    naming it (never the connection string, which may hold a password)."""
    config = config if config is not None else command_config(args)
    if config.adapter == "sqlite":
        return config.sqlite_path()
    source = getattr(args, "config", None) or find_config_file() or "the config"
    return f"the {config.adapter} store of {source}"


def where_flags(args: argparse.Namespace) -> list[str]:
    """The ``--db`` / ``--config`` the user gave, to repeat in a command line printed for them."""
    out: list[str] = []
    if getattr(args, "db", None):
        out += ["--db", str(args.db)]
    if getattr(args, "config", None):
        out += ["--config", str(args.config)]
    return out


__all__ = [
    "CONFIG_HELP",
    "DB_ENV",
    "DB_HELP",
    "DEFAULT_STORE",
    "add_config_flag",
    "add_db_flag",
    "command_config",
    "store_label",
    "where_flags",
]
