"""What the servers share about addresses: which hosts keep a server on this machine, and the
listening socket itself.

A host is judged by the addresses it resolves to, never by how its name is spelled:
``127.evil.test`` is not loopback because it starts with ``127.``, and ``localhost`` is loopback
because every address it resolves to is. :func:`listen` binds the address that was checked, so
the name cannot resolve elsewhere between the check and the bind.
"""

from __future__ import annotations

import ipaddress
import socket

from ..errors import InvalidArgumentError

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
"""The ``Host`` names a loopback server answers without a token (any port)."""

Address = tuple[socket.AddressFamily, str]
"""An address family and the numeric address of that family."""


def _bare(host: str) -> str:
    """``host`` without the brackets of an IPv6 literal (``[::1]`` -> ``::1``)."""
    host = host.strip()
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def resolve(host: str) -> list[Address]:
    """The addresses ``host`` (a name or a numeric address) resolves to, IPv4 first; a name that
    does not resolve is an :class:`InvalidArgumentError` naming ``host``."""
    if not isinstance(host, str) or not host.strip():
        raise InvalidArgumentError("host", "must be an address or a host name to bind")
    try:
        infos = socket.getaddrinfo(_bare(host), None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidArgumentError("host", f"{host!r} does not resolve to an address: {exc}") from None
    found: list[Address] = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = (family, str(sockaddr[0]))
        if address not in found:
            found.append(address)
    if not found:
        raise InvalidArgumentError("host", f"{host!r} does not resolve to an IP address")
    found.sort(key=lambda a: a[0] != socket.AF_INET)
    return found


def _loopback_address(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine: it resolves, and every address
    it resolves to is a loopback address (``127.0.0.0/8``, ``::1``)."""
    try:
        addresses = resolve(host)
    except InvalidArgumentError:
        return False
    return all(_loopback_address(address) for _, address in addresses)


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to the first address ``host`` resolves to (IPv4 first) and listening
    on ``port`` (0: a free one; the socket's ``getsockname()`` says which). A port in use, or
    an address this machine does not have, is an :class:`InvalidArgumentError`."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidArgumentError("port", f"must be a port number from 0 to 65535, got {port!r}")
    family, address = resolve(host)[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise InvalidArgumentError("port", f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    return sock


def url_host(host: str) -> str:
    """``host`` as it goes in a URL: an IPv6 literal in brackets."""
    bare = _bare(host)
    return f"[{bare}]" if ":" in bare else bare


__all__ = ["LOOPBACK_NAMES", "Address", "is_loopback", "listen", "resolve", "url_host"]
