"""The topics each audit action names (who may read it), and the "refused action" event.

Existing rows get their named topics here, by the rule new appends use
(``dashboard.audit_details.named_topics``).
"""

import django.db.models.deletion
from django.db import migrations, models


def name_topics(apps, schema_editor):
    from dashboard.audit_details import named_topics

    AuditEvent = apps.get_model("dashboard", "AuditEvent")
    AuditTopic = apps.get_model("dashboard", "AuditTopic")
    db = schema_editor.connection.alias
    batch = []
    rows = (
        AuditEvent.objects.using(db)
        .order_by("id")
        .values_list("id", "completes_id", "event_type", "topic", "detail")
    )
    for pk, completes_id, event_type, topic, detail in rows.iterator(chunk_size=2000):
        for name in named_topics(
            event_type, detail if isinstance(detail, dict) else {}, topic=topic
        ):
            batch.append(AuditTopic(event_id=completes_id or pk, topic=name))
        if len(batch) >= 2000:
            AuditTopic.objects.using(db).bulk_create(batch, ignore_conflicts=True)
            batch = []
    AuditTopic.objects.using(db).bulk_create(batch, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0010_produce_message"),
    ]

    operations = [
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
                    ("lag.export", "export lag"),
                    ("pending.export", "export pending entries"),
                    ("pending.claim", "claim pending entries"),
                    ("pending.move_to_dlq", "move pending entries to DLQ"),
                    ("group.set_position", "move a group's position"),
                    ("message.produce", "produce a test message"),
                    ("retention.trim", "trim partition streams by retention rules"),
                    ("retry.now", "retry items of the retry set now"),
                    ("retry.delete", "delete items of the retry set"),
                    ("alert.silence", "silence an alert"),
                    ("alert.ack", "acknowledge an alert"),
                    ("alert.unsilence", "lift an alert's silence or acknowledgement"),
                    ("role.change", "role or membership change"),
                    ("role.sync", "roles synced"),
                    ("token.issue", "API token issued"),
                    ("token.revoke", "API token revoked"),
                    ("access.denied", "refused action (no permission)"),
                ],
                db_index=True,
                max_length=32,
            ),
        ),
        migrations.CreateModel(
            name="AuditTopic",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("topic", models.CharField(blank=True, max_length=200)),
                (
                    "event",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="named_topics",
                        to="dashboard.auditevent",
                    ),
                ),
            ],
            options={
                "default_permissions": (),
                "constraints": [
                    models.UniqueConstraint(fields=("event", "topic"), name="audit_topic_once")
                ],
            },
        ),
        migrations.RunPython(name_topics, migrations.RunPython.noop),
    ]
