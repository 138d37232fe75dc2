"""The client's address and the request id, for django-axes and the audit log.

``X-Forwarded-For`` is believed only when the request comes from a trusted proxy
(``settings.TRUSTED_PROXIES``: addresses or networks, e.g. ``10.0.0.0/8``): the
client is then the right-most address in the header that is not itself a trusted
proxy. Without trusted proxies, or from any other peer, the client is ``REMOTE_ADDR``,
so nobody can pick the address a lockout or an audit row is charged to.

``X-Request-ID`` is kept only when it is 1-64 characters of ``[A-Za-z0-9._:-]``;
anything else is replaced by a fresh id.
"""

from __future__ import annotations

import ipaddress
import re
import uuid
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest

__all__ = ["client_ip", "request_id", "trusted_networks"]

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def trusted_networks() -> tuple[Network, ...]:
    return _networks(tuple(getattr(settings, "TRUSTED_PROXIES", ()) or ()))


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address, nets: tuple[Network, ...]
) -> bool:
    return any(addr.version == net.version and addr in net for net in nets)


def client_ip(request: HttpRequest) -> str:
    """The client's address (see the module doc); ``AXES_CLIENT_IP_CALLABLE`` points here."""
    remote = str(request.META.get("REMOTE_ADDR", ""))[:64]
    nets = trusted_networks()
    peer = _address(remote)
    if not nets or peer is None or not _trusted(peer, nets):
        return remote
    hops = str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")
    for hop in reversed(hops):
        addr = _address(hop)
        if addr is None:
            return remote  # a garbled header: fall back to the proxy itself
        if not _trusted(addr, nets):
            return str(addr)
    return remote


def request_id(request: HttpRequest) -> str:
    """``X-Request-ID`` when well formed, else a new random id."""
    given = request.headers.get("X-Request-ID", "")
    return given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
