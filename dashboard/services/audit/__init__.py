"""The audit log, written by every service that changes state (one home for audit).

- :mod:`.write`: ``with audited(...)``: intent before the action, outcome (or the
  error) after; the reason and confirmation checks; one hash chain (HMAC-signed
  with ``AUDIT_HMAC_KEY``), the topics each row names, the head exported on commit;
- :mod:`.head`: the chain head exported out of the database (log line, ``AUDIT_HEAD_FILE``);
- :mod:`.verify`: the chain check against ``AUDIT_SIGNED_FROM`` and the exported head;
- :mod:`dashboard.audit_details` (shared with the audit selectors): text filters kept as
  a digest, the topics a row's details name;
- :mod:`.denied`: refused writes as rate-limited ``denied`` rows.
"""

from dashboard.audit_details import audit_filters, shown_detail, text_digest
from dashboard.services.audit.denied import audit_denied
from dashboard.services.audit.head import ChainHead, HeadError, read_head
from dashboard.services.audit.verify import (
    VERIFY_CACHE_KEY,
    ChainReport,
    audit_verify,
    audit_verify_cached,
    signed_from,
)
from dashboard.services.audit.write import (
    MAX_LETTER_IDS,
    Actor,
    Audited,
    AuditReasonError,
    ConfirmationError,
    Origin,
    audit_begin,
    audit_complete,
    audit_record,
    audited,
    origin_from_request,
    require_confirmation,
    require_reason,
)

__all__ = [
    "MAX_LETTER_IDS",
    "VERIFY_CACHE_KEY",
    "Actor",
    "AuditReasonError",
    "Audited",
    "ChainHead",
    "ChainReport",
    "ConfirmationError",
    "HeadError",
    "Origin",
    "audit_begin",
    "audit_complete",
    "audit_denied",
    "audit_filters",
    "audit_record",
    "audit_verify",
    "audit_verify_cached",
    "audited",
    "origin_from_request",
    "read_head",
    "require_confirmation",
    "require_reason",
    "shown_detail",
    "signed_from",
    "text_digest",
]
