"""Production (docker-compose / gunicorn): every secret from env, HTTPS assumed."""

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403

DEBUG = False
if (not SECRET_KEY or SECRET_KEY.startswith("dev-")) and not os.environ.get(  # noqa: F405
    "OPSDASH_CHECK_ONLY"
):
    raise ImproperlyConfigured(
        "set SECRET_KEY for production (production settings are the default; "
        "for development set DJANGO_SETTINGS_MODULE=config.settings.dev)"
    )
if not METRICS_BEARER_TOKEN and not METRICS_PUBLIC:  # noqa: F405
    raise ImproperlyConfigured(
        "set METRICS_BEARER_TOKEN for /metrics (or METRICS_PUBLIC=1 to serve it without one)"
    )
SECURE_SSL_REDIRECT = os.environ.get("SECURE_SSL_REDIRECT", "1") == "1"
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_AUTOREFRESH = False
# Only collectstatic's copies: hashed names, precompressed (gzip), which WhiteNoise serves
# with a one-year immutable max-age; other files (none are linked) get its short default.
WHITENOISE_USE_FINDERS = False
