"""Groups Viewer/Operator/Admin with their custom permissions, the audit chain head,
and (PostgreSQL only) a trigger that refuses UPDATE and DELETE on the audit table.

TRUNCATE stays possible for Django's own flush (test databases); in production
revoke it from the application role. A truncated log is still detected:
``audit_verify`` compares the rows with the chain head's append counter.
"""

from django.db import migrations

ROLE_PERMISSIONS = {
    "Viewer": ["console_view"],
    "Operator": [
        "console_view",
        "console_view_payload",
        "console_replay",
        "console_claim",
        "console_move_to_dlq",
    ],
    "Admin": [
        "console_view",
        "console_view_payload",
        "console_replay",
        "console_claim",
        "console_move_to_dlq",
        "console_force",
        "console_replay_target",
        "console_delete",
        "console_purge",
    ],
}
LABELS = {
    "console_view": "View pages and API reads",
    "console_view_payload": "See payloads of sensitive topics",
    "console_replay": "Replay dead letters to their original partition",
    "console_claim": "Claim pending entries to a consumer",
    "console_move_to_dlq": "Move pending entries to the DLQ",
    "console_force": "Force replay of an already replayed letter",
    "console_replay_target": "Replay to another topic or partition",
    "console_delete": "Delete a dead letter",
    "console_purge": "Purge a whole DLQ",
}

PG_TRIGGER = """
CREATE OR REPLACE FUNCTION dashboard_audit_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit log is append-only: % refused', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER dashboard_auditevent_append_only
    BEFORE UPDATE OR DELETE ON dashboard_auditevent
    FOR EACH ROW EXECUTE FUNCTION dashboard_audit_refuse_change();
"""
PG_TRIGGER_DROP = """
DROP TRIGGER IF EXISTS dashboard_auditevent_append_only ON dashboard_auditevent;
DROP TRIGGER IF EXISTS dashboard_auditevent_no_truncate ON dashboard_auditevent;
DROP FUNCTION IF EXISTS dashboard_audit_refuse_change();
"""


def create_roles(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    db = schema_editor.connection.alias
    ct, _ = ContentType.objects.using(db).get_or_create(
        app_label="dashboard", model="consoleaccess"
    )
    perms = {}
    for codename, label in LABELS.items():
        perm, _ = Permission.objects.using(db).get_or_create(
            content_type=ct, codename=codename, defaults={"name": label}
        )
        perms[codename] = perm
    for name, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.using(db).get_or_create(name=name)
        group.permissions.add(*(perms[c] for c in codenames))
    AuditChainHead = apps.get_model("dashboard", "AuditChainHead")
    AuditChainHead.objects.using(db).get_or_create(pk=1)


def add_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_TRIGGER, params=None)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_TRIGGER_DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("dashboard", "0002_roles_audit_replay_jobs"),
    ]

    operations = [
        migrations.RunPython(create_roles, migrations.RunPython.noop),
        migrations.RunPython(add_trigger, drop_trigger),
    ]
