"""The ``memory`` config of a fresh store on each engine, for the tests of ``Memory`` (imported by
name: each test folder's ``conftest`` module would shadow another's)."""

from __future__ import annotations

import uuid
from typing import Any

from cogitator_memory.testing.services import service_url


def memory_config(engine: str, tmp_path: Any, prefix: str = "rt") -> dict[str, Any]:
    """The ``memory`` config of a fresh store on ``engine`` (memory, sqlite, postgres, redis,
    mongodb): a file under ``tmp_path``, or a schema, key prefix or database of its own."""
    tag = f"{prefix}{uuid.uuid4().hex[:8]}"
    if engine == "memory":
        return {"adapter": "memory"}
    if engine == "sqlite":
        return {"adapter": "sqlite", "path": str(tmp_path / "memory.db")}
    if engine == "postgres":
        return {
            "adapter": "postgres",
            "connection_string": service_url("COGMEM_TEST_POSTGRES_URL"),
            "options": {"schema": tag},
        }
    if engine == "redis":
        return {
            "adapter": "redis",
            "connection_string": service_url("COGMEM_TEST_REDIS_URL"),
            "options": {"key_prefix": f"{tag}:"},
        }
    return {
        "adapter": "mongodb",
        "connection_string": service_url("COGMEM_TEST_MONGODB_URL"),
        "options": {"database": tag},
    }
