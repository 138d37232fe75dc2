from django.contrib import admin
from django.urls import include, path

from dashboard.views import sso

urlpatterns = [
    path("login/", sso.ConsoleLoginView.as_view(), name="login"),
    path("logout/", sso.sso_logout, name="logout"),
    path("oidc/authenticate/", sso.oidc_authenticate, name="oidc_authentication_init"),
    path("oidc/callback/", sso.oidc_callback, name="oidc_authentication_callback"),
    path("admin/", admin.site.urls),
    path("", include("dashboard.urls")),
]
