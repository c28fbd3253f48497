"""What the servers share about addresses: which ones keep a server on this machine."""

from __future__ import annotations

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
"""Host names and addresses that reach only this machine (and any 127.x.y.z address)."""


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine."""
    return host in LOOPBACK_NAMES or host.startswith("127.")


__all__ = ["LOOPBACK_NAMES", "is_loopback"]
