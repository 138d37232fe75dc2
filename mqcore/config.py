"""Connection settings for one MQ deployment, and the client factory.

Every client mqcore creates has socket timeouts, so no call can hang forever
(a stalled Redis surfaces as ConnectionLostError). Use :meth:`MQConfig.from_url` in applications.
"""

from __future__ import annotations

# socket.getaddrinfo encodes a host name with the idna codec, imported on first use: that
# would be inside a fresh process's first collector pass (its first connection), ~1 ms
import encodings.idna  # noqa: F401
import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

from redis.cluster import RedisCluster

from mqcore.codec.limits import DEFAULT_DECODE_BUDGET_BYTES, DEFAULT_MAX_DECODE_BYTES, DecodeBudget
from mqcore.errors import InvalidArgumentError
from mqcore.keys import DEFAULT_CONTROL_PREFIX, DEFAULT_STREAM_PREFIX, KeySpace
from mqcore.sentinel import client_from_url, is_sentinel_url, parse_sentinel_url, sentinel_client

__all__ = ["ENCODINGS", "FRONTIER_MODES", "MQConfig", "RedisClient", "redact_urls"]

# scheme://user:password@ (user may be empty, as in redis://:password@host)
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^\s/@:'\"]*):([^\s/@'\"]+)@")
# a Sentinel URL's own password option (mqcore.sentinel): ?sentinel_password=...
_URL_PASSWORD_OPTION = re.compile(r"(?i)\b(sentinel_password=)[^\s&'\"]+")


def redact_urls(text: str) -> str:
    """``text`` with the password of every connection URL in it replaced by ``***``."""
    return _URL_PASSWORD_OPTION.sub(r"\1***", _URL_CREDENTIALS.sub(r"\1\2:***@", text))


# A standalone client or a cluster client; both offer the commands mqcore uses.
RedisClient = Any

DEFAULT_SOCKET_TIMEOUT_S = 5.0
DEFAULT_CONNECT_TIMEOUT_S = 2.0
DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024  # refuse larger payloads before any write
DEFAULT_INLINE_PAYLOAD_BYTES = 64 * 1024  # Java stores larger payloads out of line
# An out-of-line payload key never expires by default, as in Java (whose default TTL is
# none): a group far behind, a rewind, a new group reading from 0, a retry item or a dead
# letter must still find it. With the TTL off a payload key is removed only by the paths that
# delete what owns it (each entry, retry item and dead letter owns its own key): the
# housekeeper's trims, the ack-delete policies' XDEL, deleting a retry item or a letter
# (delete, purge, DLQ trim) and deleting the topic; on ``java-kryo`` deployments (a Java
# service's retries and letters share the entry's key) only deleting the topic does. A TTL
# given explicitly (``MQConfig.payload_ttl_ms``) is still honoured by the producer.
DEFAULT_PAYLOAD_TTL_MS: int | None = None
ENCODINGS = ("plain", "java-kryo")
_PREFIX_OPTIONS = ("control_prefix", "stream_prefix")  # a URL's query options of mqcore's own
# the commit frontier's encoding mode in the Lua scripts (scripts/lib/frontier.lua), per encoding
FRONTIER_MODES = {"plain": "plain", "java-kryo": "kryo"}


@dataclass(frozen=True)
class MQConfig:
    """How to reach and lay out one MQ deployment.

    ``cluster=True`` (or a ``redis+cluster://`` URL) uses a Redis Cluster client
    and turns on hash tags, which every multi-key script needs there. A
    ``redis+sentinel://`` URL (:mod:`mqcore.sentinel`) gives a client of the master its
    Sentinels name, which follows the master after a failover.
    """

    url: str = "redis://127.0.0.1:6379/0"
    control_prefix: str = DEFAULT_CONTROL_PREFIX
    stream_prefix: str = DEFAULT_STREAM_PREFIX
    cluster: bool = False
    hash_tags: bool | None = None  # None: same as ``cluster``
    socket_timeout: float = DEFAULT_SOCKET_TIMEOUT_S
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
    inline_payload_bytes: int = DEFAULT_INLINE_PAYLOAD_BYTES
    # None (the default, as in Java): payload keys never expire; see DEFAULT_PAYLOAD_TTL_MS
    payload_ttl_ms: int | None = DEFAULT_PAYLOAD_TTL_MS
    # how mqcore writes what Java reads through Redisson's codec (the commit frontier on every
    # ack, dead letters): "plain", or "java-kryo" on a Redis a Java service shares
    encoding: str = "plain"
    client_options: dict[str, Any] = field(default_factory=dict)
    # decode limits of the readers that show data (mqcore.codec.limits): one value over
    # max_decode_bytes is never decoded; one page decodes at most decode_budget_bytes
    max_decode_bytes: int = DEFAULT_MAX_DECODE_BYTES
    decode_budget_bytes: int = DEFAULT_DECODE_BUDGET_BYTES

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding: one of {', '.join(ENCODINGS)}, not {self.encoding!r}")
        if self.sentinel:
            if self.cluster:
                raise ValueError("a Sentinel URL names one master: it cannot be a Redis Cluster")
            parse_sentinel_url(self.url)  # a bad URL is refused here, before any client

    @property
    def sentinel(self) -> bool:
        """Whether the URL names Sentinels (``redis+sentinel://``), not one Redis."""
        return is_sentinel_url(self.url)

    @classmethod
    def from_url(cls, url: str, **overrides: Any) -> MQConfig:
        """Build a config from a URL; ``redis+cluster://`` selects Redis Cluster,
        ``redis+sentinel://`` (or ``rediss+sentinel://``) a master found through Sentinel
        (format: :mod:`mqcore.sentinel`).

        Query parameters ``control_prefix`` and ``stream_prefix`` set the prefixes.
        """
        parts = urlsplit(url)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        kwargs: dict[str, Any] = {}
        if parts.scheme == "redis+cluster":
            kwargs["cluster"] = True
            url = url.replace("redis+cluster://", "redis://", 1)
        for name in _PREFIX_OPTIONS:
            if name in query:
                kwargs[name] = query[name]
        if kwargs.get("control_prefix") or kwargs.get("stream_prefix"):
            if is_sentinel_url(url):  # its other options stay: they are the Sentinels'
                rest = [(k, v) for k, v in parse_qsl(parts.query) if k not in _PREFIX_OPTIONS]
                url = parts._replace(query=urlencode(rest)).geturl()
            else:
                url = parts._replace(query="").geturl().replace("redis+cluster://", "redis://", 1)
        kwargs.update(overrides)
        return cls(url=url, **kwargs)

    def decode_budget(self) -> DecodeBudget:
        """A fresh decode budget for one page (``max_decode_bytes``, ``decode_budget_bytes``)."""
        return DecodeBudget(self.max_decode_bytes, self.decode_budget_bytes)

    @property
    def frontier_mode(self) -> str:
        """How the scripts write commit frontiers here: ``plain``, or ``kryo`` (Java's codec)."""
        return FRONTIER_MODES[self.encoding]

    @property
    def keys(self) -> KeySpace:
        tags = self.cluster if self.hash_tags is None else self.hash_tags
        return KeySpace(self.control_prefix, self.stream_prefix, tags)

    def with_(self, **changes: Any) -> MQConfig:
        return replace(self, **changes)

    def client(self) -> RedisClient:
        """A new client with timeouts; bytes in, bytes out (payloads may be binary)."""
        options = self._options()
        if self.cluster:
            return RedisCluster.from_url(self.url, **options)
        return client_from_url(self.url, **options)

    def replica_client(self) -> RedisClient:
        """A new client of a replica of a Sentinel URL's master, with :meth:`client`'s
        options (reads only: a replica refuses writes)."""
        if not self.sentinel:
            raise InvalidArgumentError("a replica is found through Sentinel: the URL is not one")
        return sentinel_client(self.url, replica=True, **self._options())

    def _options(self) -> dict[str, Any]:
        return {
            "socket_timeout": self.socket_timeout,
            "socket_connect_timeout": self.connect_timeout,
            "health_check_interval": 30,
            **self.client_options,
        }

    def redacted_url(self) -> str:
        """The URL without credentials, safe for pages and logs."""
        if self.sentinel:
            return parse_sentinel_url(self.url).redacted()
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return parts._replace(netloc=netloc, query="").geturl()
