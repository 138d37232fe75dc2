"""Migrate the provider's database and seed it: ``python -m tests.oidc_provider.seed SPEC``.

SPEC is JSON: ``{"users": [{"username", "password", "groups"}], "client_id",
"client_secret", "redirect_uri", "post_logout_redirect_uri"}``. Run again with
only ``users`` to change someone's groups.
"""

import json
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.oidc_provider.settings")


def main(spec: dict) -> None:
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    for item in spec.get("users", []):
        user, _ = User.objects.get_or_create(username=item["username"])
        user.email = f"{item['username']}@example.test"
        user.set_password(item["password"])
        user.save()
        user.groups.set([Group.objects.get_or_create(name=g)[0] for g in item["groups"]])
    if "client_id" in spec:
        Application.objects.filter(client_id=spec["client_id"]).delete()
        Application.objects.create(
            name="opsdash console",
            client_id=spec["client_id"],
            client_secret=spec["client_secret"],
            client_type=Application.CLIENT_CONFIDENTIAL,
            authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
            redirect_uris=spec["redirect_uri"],
            post_logout_redirect_uris=spec["post_logout_redirect_uri"],
            algorithm=Application.RS256_ALGORITHM,
            skip_authorization=True,
        )


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
