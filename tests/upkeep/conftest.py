"""The fixtures of the upkeep tests (see ``upkeep_helpers.py``)."""

from upkeep_helpers import model, pg_url, store, world

__all__ = ["model", "pg_url", "store", "world"]
