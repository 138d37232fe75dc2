"""API tokens expire and may be read-only; token issue/revoke audit types; an HMAC
column on audit rows; and, on SQLite, triggers that refuse UPDATE and DELETE of
audit rows (PostgreSQL has its own since 0003).

Tokens that exist already keep their write access and expire 90 days from now.
Django's ``flush`` (tests) suspends the SQLite triggers (dashboard's ``flush`` command),
as TRUNCATE passes the PostgreSQL trigger.
"""

from datetime import timedelta

from django.db import migrations, models
from django.utils import timezone

SQLITE_TRIGGERS = [
    """CREATE TRIGGER dashboard_auditevent_no_update BEFORE UPDATE ON dashboard_auditevent
    BEGIN SELECT RAISE(ABORT, 'audit log is append-only: UPDATE refused'); END;""",
    """CREATE TRIGGER dashboard_auditevent_no_delete BEFORE DELETE ON dashboard_auditevent
    BEGIN SELECT RAISE(ABORT, 'audit log is append-only: DELETE refused'); END;""",
]
SQLITE_TRIGGERS_DROP = [
    "DROP TRIGGER IF EXISTS dashboard_auditevent_no_update;",
    "DROP TRIGGER IF EXISTS dashboard_auditevent_no_delete;",
]


def sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_TRIGGERS:
            schema_editor.execute(sql)


def sqlite_triggers_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for sql in SQLITE_TRIGGERS_DROP:
            schema_editor.execute(sql)


def expire_existing_tokens(apps, schema_editor):
    ApiToken = apps.get_model("dashboard", "ApiToken")
    db = schema_editor.connection.alias
    ApiToken.objects.using(db).filter(expires_at__isnull=True).update(
        expires_at=timezone.now() + timedelta(days=90), read_only=False
    )


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0004_audit_position_alert_types"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="read_only",
            field=models.BooleanField(default=True),
        ),
        migrations.RunPython(expire_existing_tokens, migrations.RunPython.noop),
        migrations.AddField(
            model_name="auditevent",
            name="mac",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="event_type",
            field=models.CharField(
                choices=[
                    ("dlq.replay", "replay one letter"),
                    ("dlq.replay_forced", "force replay"),
                    ("dlq.replay_target", "replay to another target"),
                    ("dlq.bulk_replay", "bulk replay job"),
                    ("dlq.bulk_cancel", "cancel bulk replay"),
                    ("dlq.delete", "delete letter"),
                    ("dlq.purge", "purge DLQ"),
                    ("dlq.export", "export letters"),
                    ("pending.claim", "claim pending entries"),
                    ("pending.move_to_dlq", "move pending entries to DLQ"),
                    ("group.set_position", "move a group's position"),
                    ("alert.silence", "silence an alert"),
                    ("alert.ack", "acknowledge an alert"),
                    ("alert.unsilence", "lift an alert's silence or acknowledgement"),
                    ("role.change", "role or membership change"),
                    ("role.sync", "roles synced"),
                    ("token.issue", "API token issued"),
                    ("token.revoke", "API token revoked"),
                ],
                db_index=True,
                max_length=32,
            ),
        ),
        migrations.RunPython(sqlite_triggers, sqlite_triggers_drop),
    ]
