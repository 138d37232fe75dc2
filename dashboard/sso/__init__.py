"""Single sign-on with OpenID Connect (mozilla-django-oidc as the relying party).

``mapping`` turns the provider's claims into a console identity (a stable
``oidc:<claim>`` username and the role groups, possibly topic-scoped, that the
settings map the provider's groups to); ``accounts`` applies it to the user
rows at every login; ``backend`` is the authentication backend.
"""
