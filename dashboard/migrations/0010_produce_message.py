"""The Operator permission to produce a test message, and its audit event type."""

from django.db import migrations, models

NEW_PERMISSIONS = {"console_produce": "Produce a test message to a topic"}


def grant_operator_and_admin(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    db = schema_editor.connection.alias
    ct, _ = ContentType.objects.using(db).get_or_create(
        app_label="dashboard", model="consoleaccess"
    )
    for role in ("Operator", "Admin"):
        group, _ = Group.objects.using(db).get_or_create(name=role)
        for codename, label in NEW_PERMISSIONS.items():
            perm, _ = Permission.objects.using(db).get_or_create(
                content_type=ct, codename=codename, defaults={"name": label}
            )
            group.permissions.add(perm)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0009_retry_browser"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="consoleaccess",
            options={
                "default_permissions": (),
                "managed": False,
                "permissions": [
                    ("console_view", "View pages and API reads"),
                    ("console_view_payload", "See payloads of sensitive topics"),
                    ("console_replay", "Replay dead letters to their original partition"),
                    ("console_claim", "Claim pending entries to a consumer"),
                    ("console_move_to_dlq", "Move pending entries to the DLQ"),
                    ("console_produce", "Produce a test message to a topic"),
                    ("console_force", "Force replay of an already replayed letter"),
                    ("console_replay_target", "Replay to another topic or partition"),
                    ("console_delete", "Delete a dead letter"),
                    ("console_purge", "Purge a whole DLQ"),
                    ("console_set_position", "Move a consumer group's position"),
                    ("console_silence", "Silence or acknowledge an alert"),
                    ("console_manage_access", "Manage roles, topic scopes and sensitive topics"),
                    ("console_retry", "Retry or delete items of the retry set"),
                ],
            },
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
                ],
                db_index=True,
                max_length=32,
            ),
        ),
        migrations.RunPython(grant_operator_and_admin, migrations.RunPython.noop),
    ]
