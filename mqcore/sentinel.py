"""Redis Sentinel URLs: the one parser, and the clients they make.

A Sentinel URL names the Sentinels and the monitored master's service name instead of
one Redis; clients ask the Sentinels where the master is and follow it after a failover::

    redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB][?OPTIONS]
    rediss+sentinel://...   (TLS to the master and replicas, and to the Sentinels)

- ``HOST[:PORT]``: one or more Sentinels, comma-separated (port 26379 when left out;
  IPv6 in brackets, ``[::1]:26379``).
- ``SERVICE``: the name the Sentinels monitor the master under (``sentinel monitor NAME``).
- ``DB``: the database number, 0 when left out.
- ``USER``/``PASSWORD``: the credentials of the master and replicas (as in ``redis://``).

Query options (anything else is refused with the list below):

- ``sentinel_username``, ``sentinel_password``: the Sentinels' own credentials
  (``requirepass`` in sentinel.conf); none by default, they are not the master's.
- ``sentinel_tls``: ``true``/``false``, TLS to the Sentinels (default: as the scheme).
- ``ssl_ca_certs``, ``ssl_certfile``, ``ssl_keyfile``, ``ssl_cert_reqs``
  (``required``/``optional``/``none``), ``ssl_check_hostname``: TLS settings, as for
  ``rediss://``, used for the master, the replicas and (with TLS on) the Sentinels.

mqcore's own options (``control_prefix``, ``stream_prefix``) ride in the same query and are
taken out by :meth:`mqcore.config.MQConfig.from_url` first.

Clients are redis-py's: ``redis.sentinel.Sentinel(...).master_for(SERVICE)``, whose
connections ask a Sentinel for the master on every connect and drop themselves on a
READONLY reply (a demoted master), so a pool follows the master. :func:`kombu_broker` says
the same URL as Celery's broker wants it (kombu's ``sentinel://`` transport).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import redis
from redis.sentinel import Sentinel

__all__ = [
    "DEFAULT_SENTINEL_PORT",
    "SENTINEL_SCHEMES",
    "SentinelURL",
    "UrlConnectionPool",
    "client_from_url",
    "is_sentinel_url",
    "kombu_broker",
    "parse_sentinel_url",
    "sentinel_client",
]

DEFAULT_SENTINEL_PORT = 26379
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
_TLS_OPTIONS = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs")
_BOOL_OPTIONS = ("sentinel_tls", "ssl_check_hostname")
_OPTIONS = ("sentinel_username", "sentinel_password", *_TLS_OPTIONS, *_BOOL_OPTIONS)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class SentinelURL:
    """A parsed Sentinel URL (see the module's docstring for the format)."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False
    sentinel_tls: bool = False
    sentinel_username: str | None = None
    sentinel_password: str | None = None
    tls_options: dict[str, Any] = field(default_factory=dict)

    def master_options(self) -> dict[str, Any]:
        """redis-py connection options of the master and replicas (db, credentials, TLS)."""
        return {"db": self.db, **self._login(self.username, self.password, self.tls)}

    def sentinel_options(self) -> dict[str, Any]:
        """redis-py connection options of the Sentinels themselves."""
        return self._login(self.sentinel_username, self.sentinel_password, self.sentinel_tls)

    def _login(self, username: str | None, password: str | None, tls: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if username is not None:
            out["username"] = username
        if password is not None:
            out["password"] = password
        if tls:
            out.update(ssl=True, **self.tls_options)
        return out

    def redacted(self) -> str:
        """The URL without any credential, safe for pages and logs."""
        scheme = "rediss+sentinel" if self.tls else "redis+sentinel"
        hosts = ",".join(f"{_host(h)}:{p}" for h, p in self.sentinels)
        return f"{scheme}://{hosts}/{self.service}/{self.db}"


def is_sentinel_url(url: str) -> bool:
    """Whether ``url`` is a Sentinel URL (``redis+sentinel://`` or ``rediss+sentinel://``)."""
    return url.split("://", 1)[0].lower() in SENTINEL_SCHEMES


def parse_sentinel_url(url: str) -> SentinelURL:
    """Parse a Sentinel URL; ValueError saying what is wrong and what the format is."""
    if not is_sentinel_url(url):
        raise _bad(f"the scheme must be one of {', '.join(SENTINEL_SCHEMES)}")
    parts = urlsplit(url)
    credentials, _, hosts = parts.netloc.rpartition("@")
    username = password = None
    if credentials:
        user, colon, secret = credentials.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    sentinels = tuple(_address(item) for item in hosts.split(","))
    path = [p for p in parts.path.split("/") if p]
    if not path or len(path) > 2:
        raise _bad("the path must be /SERVICE or /SERVICE/DB")
    db = 0
    if len(path) == 2:
        if not path[1].isdigit():
            raise _bad(f"the database must be a number, not {path[1]!r}")
        db = int(path[1])
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(query) - set(_OPTIONS))
    if unknown:
        raise _bad(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(_OPTIONS)}")
    tls = parts.scheme.lower() == "rediss+sentinel"
    tls_options: dict[str, Any] = {k: query[k] for k in _TLS_OPTIONS if k in query}
    if "ssl_check_hostname" in query:
        tls_options["ssl_check_hostname"] = _flag("ssl_check_hostname", query)
    sentinel_tls = _flag("sentinel_tls", query) if "sentinel_tls" in query else tls
    return SentinelURL(
        sentinels=sentinels,
        service=unquote(path[0]),
        db=db,
        username=username,
        password=password,
        tls=tls,
        sentinel_tls=sentinel_tls,
        sentinel_username=query.get("sentinel_username"),
        sentinel_password=query.get("sentinel_password"),
        tls_options=tls_options,
    )


def sentinel_client(
    url: str | SentinelURL, *, replica: bool = False, **options: Any
) -> redis.Redis:
    """A client of the master that ``url``'s Sentinels name; it follows the master after a
    failover (``replica``: of one of its replicas instead, which the Sentinels name on each
    connect, the master when none is up: redis-py's ``slave_for``). ``options`` (timeouts,
    health checks...) apply to the master's connections, the URL's credentials and TLS
    settings on top; the ``socket_*`` ones to the Sentinels' too (as redis-py does), with
    their own credentials and TLS."""
    parsed = url if isinstance(url, SentinelURL) else parse_sentinel_url(url)
    sockets = {k: v for k, v in options.items() if k.startswith("socket_")}
    sentinel_kwargs = {**sockets, **parsed.sentinel_options()}
    # redis-py's sentinel module has no type annotations
    manager = Sentinel(  # type: ignore[no-untyped-call]
        list(parsed.sentinels),
        sentinel_kwargs=sentinel_kwargs,
        **{**options, **parsed.master_options()},
    )
    take = manager.slave_for if replica else manager.master_for
    client: redis.Redis = take(  # type: ignore[no-untyped-call]
        parsed.service, redis_class=redis.Redis
    )
    return client


def client_from_url(url: str, **options: Any) -> redis.Redis:
    """A client of ``url``: a Sentinel URL's master (:func:`sentinel_client`), else
    ``redis.Redis.from_url``."""
    if is_sentinel_url(url):
        return sentinel_client(url, **options)
    return redis.Redis.from_url(url, **options)


class UrlConnectionPool:
    """A connection pool of any URL :func:`client_from_url` takes, for settings that name a
    pool class with ``from_url`` (Django's ``RedisCache`` ``pool_class`` option)."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> redis.ConnectionPool:
        if is_sentinel_url(url):
            return sentinel_client(url, **options).connection_pool
        return redis.ConnectionPool.from_url(url, **options)


def kombu_broker(url: str) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """``url`` as Celery wants its broker: (broker URL, transport options, broker TLS).

    A Sentinel URL becomes kombu's ``sentinel://`` form, one per Sentinel joined by ``;``
    (the master's credentials and db in each), with ``master_name`` and the Sentinels'
    credentials in the transport options; any other URL is given back as it is."""
    if not is_sentinel_url(url):
        return url, {}, None
    parsed = parse_sentinel_url(url)
    userinfo = ""
    if parsed.username is not None or parsed.password is not None:
        userinfo = f"{parsed.username or ''}:{parsed.password or ''}@"
    broker = ";".join(
        f"sentinel://{userinfo}{_host(h)}:{p}/{parsed.db}" for h, p in parsed.sentinels
    )
    transport: dict[str, Any] = {"master_name": parsed.service}
    if sentinel_options := parsed.sentinel_options():
        transport["sentinel_kwargs"] = sentinel_options
    use_ssl = dict(parsed.tls_options) if parsed.tls else None
    return broker, transport, use_ssl


def _address(item: str) -> tuple[str, int]:
    item = item.strip()
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else rest
    else:
        host, _, port_text = item.partition(":")
    if not host:
        raise _bad(f"a Sentinel address is empty ({item!r})")
    if not port_text:
        return host, DEFAULT_SENTINEL_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise _bad(f"the port of Sentinel {host!r} must be 1..65535, not {port_text!r}")
    return host, int(port_text)


def _flag(name: str, query: dict[str, str]) -> bool:
    value = query[name].lower()
    if value not in (*_TRUE, *_FALSE):
        raise _bad(f"{name} must be true or false, not {query[name]!r}")
    return value in _TRUE


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _bad(why: str) -> ValueError:
    # the message never repeats the URL: it may hold passwords
    return ValueError(
        f"bad Sentinel URL: {why} (format: redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT]"
        "[,HOST[:PORT]...]/SERVICE[/DB][?sentinel_password=...&sentinel_tls=true...])"
    )
