"""SQL models of the console (one module per area; import them here for Django)."""

from dashboard.models.audit import (
    AuditChainHead,
    AuditEvent,
    AuditEventType,
    AuditPhase,
    AuditTopic,
)
from dashboard.models.replay_jobs import ReplayJob, ReplayJobStatus
from dashboard.models.roles import ConsoleAccess, GroupTopicScope, SensitiveTopic
from dashboard.models.tokens import ApiToken

__all__ = [
    "ApiToken",
    "AuditChainHead",
    "AuditEvent",
    "AuditEventType",
    "AuditPhase",
    "AuditTopic",
    "ConsoleAccess",
    "GroupTopicScope",
    "ReplayJob",
    "ReplayJobStatus",
    "SensitiveTopic",
]
