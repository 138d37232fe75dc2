"""Local development and the embedded demo (`make demo`)."""

from config.settings.base import *  # noqa: F403

DEBUG = True
