"""Embedding services: text to vectors, from OpenAI, Ollama, Google, a local model or a hash.

Every service follows the :class:`EmbeddingService` protocol (``embed``, ``embed_batch``,
``dimensions``) and raises :class:`EmbeddingServiceError` (provider, HTTP status) when its
provider fails. :func:`create_embedding_service` builds one from a configuration. Importing this
package imports no optional dependency: the local model loads ``onnxruntime`` on first use.
"""

from .base import BaseEmbeddingService, EmbeddingService, EmbeddingServiceError
from .factory import PROVIDERS, create_embedding_service
from .google import GOOGLE_MODEL_DIMENSIONS, GoogleEmbeddingService
from .hashing import HashingEmbedder
from .http import HttpEmbeddingService, RetryPolicy, parse_retry_after
from .local import LOCAL_DIMENSIONS, LocalEmbeddingService
from .ollama import OLLAMA_MODEL_DIMENSIONS, OllamaEmbeddingService
from .openai import OPENAI_MODEL_DIMENSIONS, OpenAIEmbeddingService

__all__ = [
    "GOOGLE_MODEL_DIMENSIONS",
    "LOCAL_DIMENSIONS",
    "OLLAMA_MODEL_DIMENSIONS",
    "OPENAI_MODEL_DIMENSIONS",
    "PROVIDERS",
    "BaseEmbeddingService",
    "EmbeddingService",
    "EmbeddingServiceError",
    "GoogleEmbeddingService",
    "HashingEmbedder",
    "HttpEmbeddingService",
    "LocalEmbeddingService",
    "OllamaEmbeddingService",
    "OpenAIEmbeddingService",
    "RetryPolicy",
    "create_embedding_service",
    "parse_retry_after",
]
