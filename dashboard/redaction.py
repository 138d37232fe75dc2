"""Connection URLs never reach an error page, an error e-mail or a log line with a password.

- :class:`RedactingReporterFilter` (``DEFAULT_EXCEPTION_REPORTER_FILTER``) hides the
  settings that hold connection URLs (``MQ_CLUSTERS``, ``*_URL``, ``DATABASES``) besides
  Django's own list, and redacts URL passwords in traceback variables.
- :class:`RedactUrlPasswords` (a ``logging`` filter on every handler) rewrites a record's
  message and traceback text, since errors raised by redis-py and mqcore may quote a URL.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from django.views.debug import SafeExceptionReporterFilter

from mqcore.config import redact_urls

__all__ = ["RedactUrlPasswords", "RedactingReporterFilter", "redact_urls"]

_formatter = logging.Formatter()


class RedactingReporterFilter(SafeExceptionReporterFilter):
    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|CLUSTERS|DATABASE",
        flags=re.IGNORECASE,
    )

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        cleansed = super().cleanse_setting(key, value)
        return redact_urls(cleansed) if type(cleansed) is str else cleansed

    def get_traceback_frame_variables(self, request: Any, tb_frame: Any) -> Any:
        out = []
        for name, value in super().get_traceback_frame_variables(request, tb_frame):
            try:
                text = repr(value)
            except Exception:  # a broken __repr__ is shown as Django would show it
                out.append((name, value))
                continue
            out.append((name, redact_urls(text) if "@" in text else value))
        return out


class RedactUrlPasswords(logging.Filter):
    """Replace URL passwords in the message and the formatted traceback of each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is left to the handler's own error path
            return True
        redacted = redact_urls(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_urls(record.exc_text)
        return True
