"""Test support that ships with the package: conformance suites and service URLs.

``memory_adapter_conformance_cases()`` checks a thread store against the contract every
built-in store keeps; run it on stores of your own (see :mod:`.conformance`).
"""

from .conformance import ConformanceCase, memory_adapter_conformance_cases
from .embedding import (
    CONFORMANCE_DIMENSIONS,
    EmbeddingConformanceCase,
    axis_vector,
    blend,
    embedding_adapter_conformance_cases,
    seeded_vector,
)
from .scripted_server import ScriptedServer
from .services import service_url

__all__ = [
    "CONFORMANCE_DIMENSIONS",
    "ConformanceCase",
    "EmbeddingConformanceCase",
    "ScriptedServer",
    "axis_vector",
    "blend",
    "embedding_adapter_conformance_cases",
    "memory_adapter_conformance_cases",
    "seeded_vector",
    "service_url",
]
