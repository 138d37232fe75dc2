"""Apply an SSO or LDAP identity to the user rows: create or update the user, replace its
groups.

Runs at every login, so a change of groups at the identity provider applies at the
user's next login. A plain mapping (``"sre-admins": "Admin"``) puts the user in
the role group itself; a topic-scoped mapping puts it in a group of its own,
``oidc:<provider group>`` (``ldap:<group>`` for LDAP), that carries the role's
permissions and the scopes.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction

from dashboard.models import GroupTopicScope
from dashboard.permissions import ROLES, action_permissions, roles_sync
from dashboard.sso.mapping import Identity, RoleGrant, SSORefused, scoped_group_name

__all__ = ["sync_user"]


def _scoped_group(provider_group: str, grant: RoleGrant, prefix: str) -> Group:
    group, _ = Group.objects.get_or_create(name=scoped_group_name(provider_group, prefix))
    perms = action_permissions()
    group.permissions.set([perms[a] for a in sorted(ROLES[grant.role])])
    wanted = {(grant.cluster, pattern) for pattern in grant.topics}
    have = {(s.cluster, s.pattern): s for s in group.topic_scopes.all()}
    for key, scope in have.items():
        if key not in wanted:
            scope.delete()
    for cluster, pattern in wanted - set(have):
        GroupTopicScope.objects.create(group=group, cluster=cluster, pattern=pattern)
    return group


def _groups_for(identity: Identity) -> list[Group]:
    if Group.objects.filter(name__in=ROLES).count() < len(ROLES):
        roles_sync()
    groups: dict[str, Group] = {}
    for provider_group, grant in identity.grants.items():
        group = (
            _scoped_group(provider_group, grant, identity.prefix)
            if grant.topics
            else Group.objects.get(name=grant.role)
        )
        groups[group.name] = group
    return list(groups.values())


@transaction.atomic
def sync_user(identity: Identity) -> User:
    """The user of ``identity``, created or updated, with exactly its mapped groups."""
    user = User.objects.filter(username=identity.username).first()
    if user is None:
        user = User(username=identity.username)
        user.set_unusable_password()
    elif not user.is_active:
        raise SSORefused(f"The console account {identity.username} is disabled.")
    user.email = identity.email
    user.first_name = identity.first_name
    user.last_name = identity.last_name
    user.is_staff = False
    user.is_superuser = False
    user.save()
    user.groups.set(_groups_for(identity))
    return user
