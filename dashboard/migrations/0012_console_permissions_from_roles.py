"""The console's permissions leave the model's Meta: ``dashboard.signals`` creates one per
``dashboard.permissions.Action`` and syncs the role groups from ``ROLES`` after every
``migrate``, so no later migration lists them again."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0011_audit_topics_denied"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="consoleaccess",
            options={"default_permissions": (), "managed": False},
        ),
    ]
