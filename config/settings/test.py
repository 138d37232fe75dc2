"""Test settings: the harness points MQ/console Redis at its private server."""

from config.settings.base import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
AXES_ENABLED = True
CELERY_TASK_ALWAYS_EAGER = False
# Rate limits high enough that no test but those of the limits reaches one (those tests
# set their own); the counters go to the private redis-server (tests/conftest.py).
RATELIMIT_BROWSE = "100000/m"
RATELIMIT_FILTER = "100000/m"
RATELIMIT_EXPORT = "100000/m"
RATELIMIT_TAIL = "100000/m"
