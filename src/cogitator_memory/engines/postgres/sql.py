"""SQL text every PostgreSQL module writes the same way: quoted identifiers. Its own module so
that the modules whose tables the schema's migrations create (:mod:`.graph`, :mod:`.recall`)
need not import :mod:`.schema`, which imports them."""

from __future__ import annotations


def quote_ident(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


__all__ = ["quote_ident"]
