"""The Admin permission to manage access (roles, topic scopes, sensitive topics) in the console."""

from django.db import migrations

NEW_PERMISSIONS = {"console_manage_access": "Manage roles, topic scopes and sensitive topics"}


def grant_admin(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    db = schema_editor.connection.alias
    ct, _ = ContentType.objects.using(db).get_or_create(
        app_label="dashboard", model="consoleaccess"
    )
    admin, _ = Group.objects.using(db).get_or_create(name="Admin")
    for codename, label in NEW_PERMISSIONS.items():
        perm, _ = Permission.objects.using(db).get_or_create(
            content_type=ct, codename=codename, defaults={"name": label}
        )
        admin.permissions.add(perm)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0006_retention_trim_event"),
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
                    ("console_force", "Force replay of an already replayed letter"),
                    ("console_replay_target", "Replay to another topic or partition"),
                    ("console_delete", "Delete a dead letter"),
                    ("console_purge", "Purge a whole DLQ"),
                    ("console_set_position", "Move a consumer group's position"),
                    ("console_silence", "Silence or acknowledge an alert"),
                    ("console_manage_access", "Manage roles, topic scopes and sensitive topics"),
                ],
            },
        ),
        migrations.RunPython(grant_admin, migrations.RunPython.noop),
    ]
