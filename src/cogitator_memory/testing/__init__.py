"""Test support that ships with the package: conformance suites and service URLs.

``memory_adapter_conformance_cases()`` checks a thread store against the contract every
built-in store keeps; run it on stores of your own (see :mod:`.conformance`).
"""

from .conformance import ConformanceCase, memory_adapter_conformance_cases
from .services import service_url

__all__ = ["ConformanceCase", "memory_adapter_conformance_cases", "service_url"]
