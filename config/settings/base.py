"""Settings shared by every environment; everything secret or site-specific comes from env.

Environment variables (safe dev defaults):
- ``MQ_REDIS_URL``: the default MQ deployment, named ``default``.
- ``MQ_CLUSTERS``: JSON for several deployments, e.g.
  ``{"prod-eu": {"url": "rediss://:pw@host:6380/0", "control_prefix": "streaming:mq"}}``
  (a list of ``{"name": ..., "url": ...}`` works too). Replaces ``MQ_REDIS_URL`` when set.
  Per cluster, ``write_url`` gives the console's actions a Redis user of their own (reads use
  ``url``), ``"read_only": true`` refuses every action there (docs/deploy.md, Security).
- ``CONSOLE_REDIS_URL``: the console's own store (snapshots, time series) and Celery broker.
  Every Redis URL here may be a Sentinel URL, ``redis+sentinel://host:26379,host2:26379/
  mymaster/0`` (format: mqcore/sentinel.py, docs/deploy.md).
- ``DATABASE_URL``: SQL database (users, roles, audit, replay jobs); SQLite by default.
- ``SECRET_KEY``, ``ALLOWED_HOSTS`` (comma separated).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from dashboard.store.keys import ConsoleKeys
from mqcore.sentinel import is_sentinel_url, kombu_broker, parse_sentinel_url

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("OPSDASH_VAR_DIR", BASE_DIR / "var"))


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be 1/0, true/false, yes/no or on/off, not {raw!r}")


def env_json(name: str, default: str) -> Any:
    try:
        return json.loads(os.environ.get(name, "").strip() or default)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON ({exc})") from None


def env_rate(name: str, default: str) -> str:
    """A django-ratelimit rate ("60/m", "5/10s"; empty: no limit), refused at start when bad."""
    raw = os.environ.get(name, default).strip()
    if raw and not re.fullmatch(r"[1-9]\d*/\d*[smhd]", raw):
        raise ImproperlyConfigured(f'{name} must be a rate such as "60/m" or "5/10s", not {raw!r}')
    return raw


def _check_sentinel_url(name: str, url: str) -> None:
    """A bad Sentinel URL (mqcore.sentinel) stops the start with what is wrong in it."""
    if is_sentinel_url(url):
        try:
            parse_sentinel_url(url)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {exc}") from None


def mq_clusters_from_env() -> dict[str, dict[str, Any]]:
    """Deployments to watch: name -> options (url, write_url, read_only, control_prefix,
    stream_prefix, cluster...)."""
    raw = os.environ.get("MQ_CLUSTERS", "").strip()
    if not raw:
        return {"default": {"url": os.environ.get("MQ_REDIS_URL", "redis://127.0.0.1:6379/0")}}
    example = 'e.g. MQ_CLUSTERS=\'{"default": {"url": "redis://host:6379/0"}}\''
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"MQ_CLUSTERS is not valid JSON ({exc}); {example}") from None
    if isinstance(data, list):
        if not all(isinstance(item, dict) and isinstance(item.get("name"), str) for item in data):
            raise ImproperlyConfigured(f'every MQ_CLUSTERS list item needs a "name"; {example}')
        data = {item["name"]: {k: v for k, v in item.items() if k != "name"} for item in data}
    if not isinstance(data, dict) or not data:
        raise ImproperlyConfigured(
            f"MQ_CLUSTERS must be a non-empty JSON object or list; {example}"
        )
    for name, opts in data.items():
        if not isinstance(opts, dict) or not isinstance(opts.get("url"), str):
            raise ImproperlyConfigured(f'MQ_CLUSTERS[{name!r}] needs a "url" string; {example}')
        if "write_url" in opts and not isinstance(opts["write_url"], str):
            raise ImproperlyConfigured(
                f'MQ_CLUSTERS[{name!r}]["write_url"] must be a URL string; {example}'
            )
        if not isinstance(opts.get("read_only", False), bool):
            raise ImproperlyConfigured(
                f'MQ_CLUSTERS[{name!r}]["read_only"] must be true or false; {example}'
            )
        if opts.get("read_only") and opts.get("write_url"):
            raise ImproperlyConfigured(
                f'MQ_CLUSTERS[{name!r}]: a "read_only" cluster takes no "write_url"; {example}'
            )
        _check_replica_reads(name, opts, example)
        for option in ("url", "write_url", "replica_url"):
            _check_sentinel_url(f"MQ_CLUSTERS[{name!r}][{option!r}]", opts.get(option) or "")
    return {str(name): dict(opts) for name, opts in data.items()}


def _check_replica_reads(name: str, opts: dict[str, Any], example: str) -> None:
    """``read_from_replica`` (true/false; the replica a Sentinel URL's Sentinels name) and
    ``replica_url`` (a replica of ``url``'s Redis, any URL), never both."""
    where = f"MQ_CLUSTERS[{name!r}]"
    if not isinstance(opts.get("read_from_replica", False), bool):
        raise ImproperlyConfigured(f'{where}["read_from_replica"] must be true or false; {example}')
    if "replica_url" in opts and not isinstance(opts["replica_url"], str):
        raise ImproperlyConfigured(f'{where}["replica_url"] must be a URL string; {example}')
    if opts.get("read_from_replica") and opts.get("replica_url"):
        raise ImproperlyConfigured(f'{where}: "read_from_replica" or "replica_url", not both')
    if opts.get("read_from_replica") and not is_sentinel_url(str(opts["url"])):
        raise ImproperlyConfigured(
            f'{where}: "read_from_replica" finds a replica through Sentinel (a '
            f'redis+sentinel:// url); for another Redis give its "replica_url"'
        )


SECRET_KEY = os.environ.get("SECRET_KEY", "dev-insecure-change-me")
DEBUG = False
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "axes",
    "django_ratelimit",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "dashboard.middleware.SessionTimeoutMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dashboard.middleware.HtmxMiddleware",  # request.htmx, and Vary: HX-Request
    "dashboard.middleware.SecurityHeadersMiddleware",
    "axes.middleware.AxesMiddleware",
]

# --- Login: local accounts and single sign-on (OpenID Connect) -----------------
# docs/deploy.md "Single sign-on (OIDC)" describes every setting below.
CONSOLE_LOCAL_LOGIN = env_bool("CONSOLE_LOCAL_LOGIN", True)
OIDC_RP_CLIENT_ID = os.environ.get("OIDC_RP_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("OIDC_RP_CLIENT_SECRET", "")
CONSOLE_SSO_ENABLED = bool(OIDC_RP_CLIENT_ID)
OIDC_OP_AUTHORIZATION_ENDPOINT = os.environ.get("OIDC_OP_AUTHORIZATION_ENDPOINT", "")
OIDC_OP_TOKEN_ENDPOINT = os.environ.get("OIDC_OP_TOKEN_ENDPOINT", "")
OIDC_OP_USER_ENDPOINT = os.environ.get("OIDC_OP_USER_ENDPOINT", "")
OIDC_OP_JWKS_ENDPOINT = os.environ.get("OIDC_OP_JWKS_ENDPOINT") or None
OIDC_OP_LOGOUT_ENDPOINT = os.environ.get("OIDC_OP_LOGOUT_ENDPOINT", "")  # end_session_endpoint
OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES", "openid email profile")
OIDC_USE_PKCE = True
OIDC_STORE_ID_TOKEN = True  # the id_token_hint of RP-initiated logout
OIDC_TIMEOUT = 10
# Who the user is (the console username is "oidc:<claim>") and where the groups are.
# "sub" never changes for an account; switching from another claim: docs/deploy.md.
OIDC_USERNAME_CLAIM = os.environ.get("OIDC_USERNAME_CLAIM", "sub")
OIDC_GROUPS_CLAIM = os.environ.get("OIDC_GROUPS_CLAIM", "groups")
# API tokens of SSO users work only while the user logged in within this many days
# (groups are synced at login, so a user removed at the provider loses the tokens too).
SSO_TOKEN_REVALIDATE_DAYS = env_int("SSO_TOKEN_REVALIDATE_DAYS", 7)
# Provider group -> "Viewer" | "Operator" | "Admin" | {"role": ..., "topics": [...], "cluster": ""}
OIDC_ROLE_MAP: dict[str, Any] = env_json("OIDC_ROLE_MAP", "{}")

# --- LDAP login through the login form (django-auth-ldap; dashboard/sso/directory.py) ---
# docs/deploy.md "LDAP login" describes every setting below. Setting LDAP_SERVER_URI
# switches it on; users are "ldap:<login name>", their groups mapped as OIDC's.
LDAP_SERVER_URI = os.environ.get("LDAP_SERVER_URI", "").strip()  # ldap://host or ldaps://host
CONSOLE_LDAP_ENABLED = bool(LDAP_SERVER_URI)
LDAP_START_TLS = env_bool("LDAP_START_TLS", False)
LDAP_CA_FILE = os.environ.get("LDAP_CA_FILE", "")  # CA bundle for ldaps:// and StartTLS
LDAP_BIND_DN = os.environ.get("LDAP_BIND_DN", "")  # the search account; empty: anonymous
LDAP_BIND_PASSWORD = os.environ.get("LDAP_BIND_PASSWORD", "")
LDAP_USER_SEARCH_BASE = os.environ.get("LDAP_USER_SEARCH_BASE", "")
LDAP_USER_FILTER = os.environ.get("LDAP_USER_FILTER", "(uid=%(user)s)")
LDAP_GROUP_SEARCH_BASE = os.environ.get("LDAP_GROUP_SEARCH_BASE", "")  # empty: the user base
LDAP_GROUP_TYPE = os.environ.get("LDAP_GROUP_TYPE", "groupOfNames")
LDAP_GROUP_FILTER = os.environ.get("LDAP_GROUP_FILTER", "(objectClass=groupOfNames)")
LDAP_TIMEOUT_S = env_int("LDAP_TIMEOUT_S", 5)
# LDAP group (cn) -> "Viewer" | "Operator" | "Admin" | {"role": ..., "topics": [...], "cluster": ""}
LDAP_ROLE_MAP: dict[str, Any] = env_json("LDAP_ROLE_MAP", "{}")

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    *(["django.contrib.auth.backends.ModelBackend"] if CONSOLE_LOCAL_LOGIN else []),
    *(["dashboard.sso.directory.ConsoleLDAPBackend"] if CONSOLE_LDAP_ENABLED else []),
    *(["dashboard.sso.backend.ConsoleOIDCBackend"] if CONSOLE_SSO_ENABLED else []),
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.context_processors.console",
            ],
        },
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
        conn_max_age=60,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
# The partial plotly.js bundle (scatter traces only, a quarter of the full build) at the
# version pinned in package-lock.json; scripts/bootstrap.sh installs it with npm ci.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("plotly", BASE_DIR / "node_modules" / "plotly.js-basic-dist-min"),
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard:home"
LOGOUT_REDIRECT_URL = "login"

# --- MQ deployments and the console's own store ------------------------------
MQ_CLUSTERS = mq_clusters_from_env()
CONSOLE_REDIS_URL = os.environ.get("CONSOLE_REDIS_URL", "redis://127.0.0.1:6379/1")
_check_sentinel_url("CONSOLE_REDIS_URL", CONSOLE_REDIS_URL)
CONSOLE_KEY_PREFIX = os.environ.get("CONSOLE_KEY_PREFIX", "opsdash")
# Pending page: entries delivered this many times or more are highlighted as poison
# (the consumers' max retries + 1).
CONSOLE_POISON_DELIVERIES = env_int("CONSOLE_POISON_DELIVERIES", 4)
# Pending pages scan at most this many PEL entries per request (the page says when partial).
PENDING_MAX_SCAN = env_int("PENDING_MAX_SCAN", 200_000)
# Exports ("export all matching" of lag, pending, DLQ): at most this many rows each (the
# filename and the X-Export-Max-Rows header say so); a pending export scans at most
# EXPORT_MAX_SCAN PEL entries, a DLQ export as many letters.
EXPORT_MAX_ROWS = env_int("EXPORT_MAX_ROWS", 50_000)
EXPORT_MAX_SCAN = env_int("EXPORT_MAX_SCAN", 1_000_000)
# The message browser's CPU budget: a "where" expression evaluates at most about this many
# terms a request (each entry costs the expression's terms + 1), which lowers max_scan.
BROWSE_EXPRESSION_BUDGET = env_int("BROWSE_EXPRESSION_BUDGET", 1_000_000)
# Per-user rate limits (django-ratelimit rates: "N/s", "N/m", "N/h"; empty: no limit) on the
# browser, DLQ and retry pages (browse), those with a filter that reads entries (filter),
# and exports (export), pages and API alike (dashboard/ratelimits.py, docs/deploy.md).
RATELIMIT_BROWSE = env_rate("RATELIMIT_BROWSE", "60/m")
RATELIMIT_FILTER = env_rate("RATELIMIT_FILTER", "20/m")
RATELIMIT_EXPORT = env_rate("RATELIMIT_EXPORT", "10/m")
# The live tail's polls (one a second while a tail is open; each poll a bounded read).
RATELIMIT_TAIL = env_rate("RATELIMIT_TAIL", "120/m")
# The counters live in the console store, under their own key prefix; "default" stays the
# per-process memory cache it always was (the audit chain check's result).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "ratelimit": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        # a list: Django splits a string at commas, which a Sentinel URL has
        "LOCATION": [CONSOLE_REDIS_URL],
        "KEY_PREFIX": ConsoleKeys(CONSOLE_KEY_PREFIX).cache_prefix("ratelimit"),
        "OPTIONS": {
            "socket_connect_timeout": 2,
            "socket_timeout": 2,
            "pool_class": "mqcore.sentinel.UrlConnectionPool",  # Sentinel URLs too
        },
    },
}
RATELIMIT_USE_CACHE = "ratelimit"
# django-ratelimit names the backends it has tested; Django's RedisCache adds with SET NX and
# counts with INCR, which is what the counters need.
SILENCED_SYSTEM_CHECKS = ["django_ratelimit.W001"]

# --- Celery ------------------------------------------------------------------
# A Sentinel URL becomes kombu's sentinel:// broker, its master name a transport option.
_check_sentinel_url("CELERY_BROKER_URL", os.environ.get("CELERY_BROKER_URL", ""))
CELERY_BROKER_URL, _BROKER_TRANSPORT, CELERY_BROKER_USE_SSL = kombu_broker(
    os.environ.get("CELERY_BROKER_URL", CONSOLE_REDIS_URL)
)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 300, **_BROKER_TRANSPORT}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # workers log through LOGGING (URL redaction)
COLLECT_INTERVAL_S = env_int("COLLECT_INTERVAL_S", 10)
# Several beats may run; the one holding a lock in the console store sends the tasks
# (dashboard/beat.py). Its TTL: a follower takes over within TTL + TTL/3 of the leader's
# death, within one collect interval by default.
CELERY_BEAT_SCHEDULER = "dashboard.beat:LeaderScheduler"
BEAT_LOCK_TTL_MS = env_int("BEAT_LOCK_TTL_MS", max(300, COLLECT_INTERVAL_S * 1000 // 2))
# the retention housekeeper runs this often on each cluster with "retention" rules in
# MQ_CLUSTERS (none by default: it deletes nothing until rules are configured)
HOUSEKEEP_INTERVAL_S = env_int("HOUSEKEEP_INTERVAL_S", 60)

# --- Collectors: status rules, series retention, alerts (dashboard.status/store/alerts) ---
STATUS_WINDOW_SAMPLES = env_int("STATUS_WINDOW_SAMPLES", 5)
STATUS_ALLOWED_LAG = env_int("STATUS_ALLOWED_LAG", 0)
# STOP after this long without consumer activity; 0 means the window's span.
STATUS_STOP_AFTER_S = float(os.environ.get("STATUS_STOP_AFTER_S", "0"))
# Per topic: {"orders": {"allowed_lag": 100, "window_samples": 10, "stop_after_s": 120}}
STATUS_TOPIC_THRESHOLDS: dict[str, dict[str, Any]] = json.loads(
    os.environ.get("STATUS_TOPIC_THRESHOLDS", "{}")
)
DLQ_GROWTH_WINDOW_S = env_int("DLQ_GROWTH_WINDOW_S", 300)
SERIES_RAW_RETENTION_S = env_int("SERIES_RAW_RETENTION_S", 24 * 3600)
SERIES_1M_RETENTION_S = env_int("SERIES_1M_RETENTION_S", 7 * 24 * 3600)
SERIES_10M_RETENTION_S = env_int("SERIES_10M_RETENTION_S", 90 * 24 * 3600)
# Incident timeline: events per cluster (and per topic) kept at most, besides the longest
# series retention; a DLQ that grows by this many letters in one pass is a burst.
INCIDENT_TIMELINE_MAX = env_int("INCIDENT_TIMELINE_MAX", 20_000)
INCIDENT_DLQ_BURST = env_int("INCIDENT_DLQ_BURST", 10)
ALERT_STATUS_FOR_S = env_int("ALERT_STATUS_FOR_S", 300)
ALERT_DLQ_GROWTH = env_int("ALERT_DLQ_GROWTH", 1)
ALERT_OLDEST_PENDING_S = env_int("ALERT_OLDEST_PENDING_S", 600)
ALERT_CHECKPOINT_AGE_S = env_int("ALERT_CHECKPOINT_AGE_S", 900)
ALERT_COLLECTOR_FAILURES = env_int("ALERT_COLLECTOR_FAILURES", 3)
ALERT_RESTART_HOLD_S = env_int("ALERT_RESTART_HOLD_S", 3600)
# memory_growth: a topic's partition streams grew by this many MiB and by this share of
# what they took at the start of the window (MEMORY_GROWTH_WINDOW_S)
ALERT_MEMORY_GROWTH_MB = env_int("ALERT_MEMORY_GROWTH_MB", 256)
ALERT_MEMORY_GROWTH_SHARE = float(os.environ.get("ALERT_MEMORY_GROWTH_SHARE", "0.5"))
MEMORY_GROWTH_WINDOW_S = env_int("MEMORY_GROWTH_WINDOW_S", 3600)
# Per-topic memory: once a minute the collector asks MEMORY USAGE (SAMPLES below) of the
# partition streams of the next topics in turn, at most this many streams per minute.
MEMORY_PROBE_STREAMS = env_int("MEMORY_PROBE_STREAMS", 256)
MEMORY_PROBE_SAMPLES = env_int("MEMORY_PROBE_SAMPLES", 5)
ALERT_HISTORY_MAX = env_int("ALERT_HISTORY_MAX", 200)
# Alert webhooks (docs/operators.md, Alert webhooks): ALERT_WEBHOOK_URL is one generic JSON
# webhook; ALERT_WEBHOOKS a JSON list of {"url", "format": "json|slack|pagerduty",
# "routing_key_env" | "routing_key"}, checked at start (dashboard.collectors.notify).
ALERT_WEBHOOK_URL = os.environ.get("ALERT_WEBHOOK_URL", "")
ALERT_WEBHOOKS = os.environ.get("ALERT_WEBHOOKS", "")

# --- Dead letters and pipelines ------------------------------------------------
# A bulk replay job's worker lease: a job whose worker died resumes after it.
DLQ_JOB_LEASE_S = float(os.environ.get("OPSDASH_REPLAY_LEASE_S", "15"))
# A DLQ text filter reads at most about this many bytes of letters per page request.
DLQ_TEXT_FILTER_MAX_BYTES = env_int("DLQ_TEXT_FILTER_MAX_BYTES", 8 * 1024 * 1024)
# Hostile data (docs/deploy.md, Security): a payload, header or Kryo value longer than
# MQ_MAX_DECODE_BYTES is shown as "too large, N bytes" and never decoded; one page decodes
# at most MQ_DECODE_BUDGET_BYTES of payloads (defaults of every cluster; a cluster's
# "max_decode_bytes" / "decode_budget_bytes" in MQ_CLUSTERS override them). The raw bytes
# download refuses values over PAYLOAD_DOWNLOAD_MAX_BYTES.
MQ_MAX_DECODE_BYTES = env_int("MQ_MAX_DECODE_BYTES", 1024 * 1024)
MQ_DECODE_BUDGET_BYTES = env_int("MQ_DECODE_BUDGET_BYTES", 8 * 1024 * 1024)
PAYLOAD_DOWNLOAD_MAX_BYTES = env_int("PAYLOAD_DOWNLOAD_MAX_BYTES", 64 * 1024 * 1024)
# A previewed bulk replay (a draft job with its frozen ids) expires after this long;
# expired drafts are deleted on the next preview and cannot be started.
DLQ_DRAFT_TTL_S = env_int("DLQ_DRAFT_TTL_S", 3600)
DLQ_BULK_MAX_LETTERS = env_int("DLQ_BULK_MAX_LETTERS", 200_000)  # largest frozen set per job
READYZ_CACHE_S = env_int("READYZ_CACHE_S", 5)  # /readyz answers from a cache this long
PIPELINES_POLL_S = env_int("PIPELINES_POLL_S", 5)  # checkpoints pages read Redis live

# --- Security ----------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = 0.25  # hours
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# Client addresses (axes lockouts, audit rows) come from X-Forwarded-For only when the
# peer is one of these proxies (comma-separated addresses or networks, e.g. 10.0.0.0/8).
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", "")
AXES_CLIENT_IP_CALLABLE = "dashboard.client_addr.client_ip"
# Sessions: at most SESSION_MAX_AGE_S after login, and logged out after
# SESSION_IDLE_TIMEOUT_S without activity (dashboard.middleware.SessionTimeoutMiddleware).
SESSION_MAX_AGE_S = env_int("SESSION_MAX_AGE_S", 8 * 3600)
SESSION_IDLE_TIMEOUT_S = env_int("SESSION_IDLE_TIMEOUT_S", 30 * 60)
SESSION_COOKIE_AGE = SESSION_MAX_AGE_S
# API tokens expire after this many days unless issued with --days.
API_TOKEN_DAYS = env_int("API_TOKEN_DAYS", 90)
# The audit page's chain check re-hashes the whole log at most once per this many seconds.
AUDIT_VERIFY_INTERVAL_S = env_int("AUDIT_VERIFY_INTERVAL_S", 60)
# Audit rows carry HMAC(AUDIT_HMAC_KEY, row hash); keep the key outside the database.
AUDIT_HMAC_KEY = os.environ.get("AUDIT_HMAC_KEY", "")
# The id of the first audit row signed with AUDIT_HMAC_KEY: every row from it on must carry
# a valid HMAC (`manage.py audit_verify` prints the value to set). Unset: HMACs are checked
# from the first signed row only, and a chain stripped of them is not noticed.
AUDIT_SIGNED_FROM = int(os.environ.get("AUDIT_SIGNED_FROM") or 0) or None
# Every committed audit append exports the chain head (id, hash, count) to the
# "opsdash.audit.head" logger and, when set, appends it to this file (JSON lines, fsync'd).
AUDIT_HEAD_FILE = os.environ.get("AUDIT_HEAD_FILE", "")
# Refused writes are audited as "denied" rows, at most this many per user per minute.
AUDIT_DENIED_PER_MINUTE = env_int("AUDIT_DENIED_PER_MINUTE", 10)
# /metrics: a bearer token; production refuses to start without one unless METRICS_PUBLIC=1.
METRICS_BEARER_TOKEN = os.environ.get("METRICS_BEARER_TOKEN", "")
METRICS_PUBLIC = os.environ.get("METRICS_PUBLIC", "") == "1"
# Error pages and e-mails hide connection URLs; log lines have URL passwords redacted.
DEFAULT_EXCEPTION_REPORTER_FILTER = "dashboard.redaction.RedactingReporterFilter"
# /metrics exports at most this many per-partition series (five per group and partition);
# beyond it whole groups are left out, best status first (docs/observability.md).
METRICS_MAX_PARTITION_SERIES = env_int("METRICS_MAX_PARTITION_SERIES", 50_000)

# Celery's routine per-task lines (task received / succeeded, beat "sending due task") log at
# INFO every few seconds; the demo sets WARNING. The collector's own summary is once a minute.
TASK_EVENT_LOG_LEVEL = os.environ.get("TASK_EVENT_LOG_LEVEL", "INFO").upper()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"redact_urls": {"()": "dashboard.redaction.RedactUrlPasswords"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["redact_urls"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"axes": {"level": "WARNING"}},
}

# Dev/test serve static files straight from the finders; prod uses collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
