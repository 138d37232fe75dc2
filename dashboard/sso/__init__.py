"""Single sign-on with OpenID Connect (mozilla-django-oidc as the relying party), and
LDAP login through the login form (django-auth-ldap).

``mapping`` turns the provider's claims, or an LDAP user's groups, into a console
identity (a stable ``oidc:<claim>`` or ``ldap:<name>`` username and the role groups,
possibly topic-scoped, that the settings map the groups to); ``accounts`` applies
it to the user rows at every login; ``backend`` (OIDC) and ``directory`` (LDAP)
are the authentication backends.
"""
