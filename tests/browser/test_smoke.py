import pytest
from django.contrib.auth.models import Group, User

from dashboard.permissions import VIEWER, roles_sync

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_login_in_real_chromium(login, live_server, artifacts_dir) -> None:
    roles_sync()  # transactional tests flush the migration-created role groups
    user = User.objects.create_user("smoke", password="smoke-pass-123")
    user.groups.add(Group.objects.get(name=VIEWER))
    page = login("smoke", "smoke-pass-123")
    assert page.url.startswith(f"{live_server.url}/clusters/default/")
    assert page.locator("text=Log out").is_visible()
    page.screenshot(path=str(artifacts_dir / "smoke-login.png"), full_page=True)
