"""The REST server and the memory inspector page (``pip install "cogitator-memory[server]"``).

:func:`create_app` builds the ASGI app over a :class:`~cogitator_memory.runtime.Memory`;
:func:`serve` runs it with uvicorn (loopback by default, a bearer token asked unless told
``no_auth``, which only loopback may have).
See ``docs/server.md``.
"""

from __future__ import annotations

from .app import MAX_BODY_BYTES, create_app, is_loopback, problem_body
from .serve import serve

__all__ = ["MAX_BODY_BYTES", "create_app", "is_loopback", "problem_body", "serve"]
