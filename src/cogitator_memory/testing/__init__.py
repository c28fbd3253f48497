"""Test support that ships with the package: conformance suites, a scripted HTTP server and service URLs.

One suite per capability, each a list of named async cases that take a fresh connected store:
``memory_adapter_conformance_cases()`` (threads, :mod:`.conformance`),
``embedding_adapter_conformance_cases()`` (vectors, :mod:`.embedding`),
``memory_item_adapter_conformance_cases()`` (items, :mod:`.items`),
``fact_adapter_conformance_cases()`` (facts, :mod:`.facts`),
``memory_file_adapter_conformance_cases()`` (memory files, :mod:`.files`) and
``graph_adapter_conformance_cases()`` (the knowledge graph, :mod:`.graph`) and
``recall_index_conformance_cases()`` (the recall index, :mod:`.recall_index`). Run them on stores of
your own; see ``docs/testing.md``.
"""

from .cascade import CascadeCase, CascadeStores, cascade_cases
from .conformance import ConformanceCase, memory_adapter_conformance_cases
from .embedding import (
    CONFORMANCE_DIMENSIONS,
    EmbeddingConformanceCase,
    axis_vector,
    blend,
    embedding_adapter_conformance_cases,
    seeded_vector,
)
from .facts import FactConformanceCase, fact_adapter_conformance_cases
from .files import FileConformanceCase, memory_file_adapter_conformance_cases
from .graph import GraphConformanceCase, graph_adapter_conformance_cases
from .items import ItemConformanceCase, memory_item_adapter_conformance_cases
from .recall_index import RecallIndexConformanceCase, recall_index_conformance_cases
from .scripted_server import ScriptedServer
from .services import postgres_database, service_url

__all__ = [
    "CONFORMANCE_DIMENSIONS",
    "CascadeCase",
    "CascadeStores",
    "ConformanceCase",
    "EmbeddingConformanceCase",
    "FactConformanceCase",
    "FileConformanceCase",
    "GraphConformanceCase",
    "ItemConformanceCase",
    "RecallIndexConformanceCase",
    "ScriptedServer",
    "axis_vector",
    "blend",
    "cascade_cases",
    "embedding_adapter_conformance_cases",
    "fact_adapter_conformance_cases",
    "graph_adapter_conformance_cases",
    "memory_adapter_conformance_cases",
    "memory_file_adapter_conformance_cases",
    "memory_item_adapter_conformance_cases",
    "postgres_database",
    "recall_index_conformance_cases",
    "seeded_vector",
    "service_url",
]
