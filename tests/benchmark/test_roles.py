"""The site's roles, made from the command line as the README says (docs/reviews.md, "Roles"), each
signed in through the one sign-in page and walked through its pages."""

import re
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from judging.models import Judgment
from tests.benchmark.factories import PASSWORD
from tests.judging.factories import JudgeFactory
from tests.submissions.factories import SubmissionFactory

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _password(monkeypatch):
    monkeypatch.setenv("PW", PASSWORD)


def _sign_in(client, username: str, next_url: str = "/") -> str:
    client.logout()
    answer = client.post(
        "/accounts/login/", {"username": username, "password": PASSWORD, "next": next_url}
    )
    assert answer.status_code == 302, answer.content.decode()[:500]
    return answer["Location"]


def _status(client, url: str) -> int:
    return client.get(url).status_code


# What each role reaches: 200, 403 (signed in, not theirs) or 302 (to sign in).
ORGANISER_PAGES = {
    "/admin/": 200,
    "/admin/judging/judge/": 200,  # judges
    "/admin/judging/rubric/": 200,
    "/admin/submissions/submission/": 200,
    "/admin/reviews/reviewround/": 200,
    "/admin/benchmark/task/": 200,
    "/admin/auth/user/add/": 200,  # "accounts are made by organisers, e.g. in /admin/"
    "/reviews/rounds/": 200,
    "/reviews/export.csv?stage=end2end": 200,
    "/agent-runs/": 200,
    "/agent-runs/new/": 200,
}


def test_user_create_organiser_can_do_what_the_readme_says_organisers_do(client):
    call_command("accounts", "user-create", "olga", "--organiser", "--password-env", "PW")
    _sign_in(client, "olga")
    for url, expected in ORGANISER_PAGES.items():
        assert _status(client, url) == expected, url
    admin = client.get("/admin/").content.decode()
    for app in ("Benchmark", "Submissions", "MLR-Judge", "Human review", "Agent runs"):
        assert app in admin, app
    # Judge now, the organiser's button, queues the active judges.
    JudgeFactory(is_active=True)
    submission = SubmissionFactory(stage="end2end")
    page = client.get(submission.get_absolute_url()).content.decode()
    assert 'data-testid="judge-now"' in page and "Agent runs</a>" in page
    client.post(reverse("judging:submission-judge-now", args=[submission.pk]))
    assert Judgment.objects.filter(submission=submission).exists()
    # An organiser makes accounts, but never a superuser (themselves included).
    olga = User.objects.get(username="olga")
    form = client.get(f"/admin/auth/user/{olga.pk}/change/").content.decode()
    assert 'name="is_superuser"' not in form and 'name="groups"' in form
    # Nor reach a superuser's account (its password form would make them one).
    root = User.objects.create_superuser("root", password=PASSWORD)
    assert _status(client, f"/admin/auth/user/{root.pk}/password/") in (302, 404)
    assert _status(client, f"/admin/auth/user/{root.pk}/change/") in (302, 404)


def test_an_organiser_makes_a_judge_panel_and_a_release_in_the_admin(client):
    """Issue 39: "admin for the site's models, rounds, judges, releases": panels
    and releases had no admin page, only commands."""
    from judging.models import JudgePanel, StagePanel
    from leaderboard.models import Release

    call_command("accounts", "user-create", "olga", "--organiser", "--password-env", "PW")
    _sign_in(client, "olga")
    judges = [JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")]
    made = client.post(
        "/admin/judging/judgepanel/add/",
        {"name": "pair", "judges": [judge.pk for judge in judges], "description": "two"},
    )
    assert made.status_code == 302, made.content.decode()[:2000]
    panel = JudgePanel.objects.get(name="pair")
    assert {judge.name for judge in panel.judges.all()} == {"judge-a", "judge-b"}
    # Fixed once made: the change form shows its judges, it cannot change them.
    client.post(f"/admin/judging/judgepanel/{panel.pk}/change/", {"description": "new"})
    assert {judge.name for judge in panel.judges.all()} == {"judge-a", "judge-b"}
    refused = client.post("/admin/judging/judgepanel/add/", {"name": "none", "judges": []})
    assert refused.status_code == 200 and not JudgePanel.objects.filter(name="none").exists()
    made = client.post("/admin/judging/stagepanel/add/", {"stage": "end2end", "panel": panel.pk})
    assert made.status_code == 302
    assert StagePanel.objects.get(stage="end2end").panel == panel

    made = client.post("/admin/leaderboard/release/add/", {"name": "spring-1", "notes": "n"})
    assert made.status_code == 302, made.content.decode()[:2000]
    release = Release.objects.get(name="spring-1")
    assert release.content and release.files.exists()
    shown = client.get(f"/admin/leaderboard/release/{release.pk}/change/")
    assert shown.status_code == 200 and "/releases/spring-1/" in shown.content.decode()
    again = client.post("/admin/leaderboard/release/add/", {"name": "spring-1"})
    assert again.status_code == 200 and "already exists" in again.content.decode()
    bad = client.post("/admin/leaderboard/release/add/", {"name": "no spaces"})
    assert bad.status_code == 200 and Release.objects.count() == 1


def test_staff_is_the_old_name_of_organiser(client):
    call_command("accounts", "user-create", "alice", "--staff", "--password-env", "PW")
    _sign_in(client, "alice")
    assert _status(client, "/reviews/rounds/") == 200
    assert _status(client, "/admin/judging/judge/") == 200
    assert _status(client, "/agent-runs/") == 200


def test_role_add_and_role_remove_change_what_an_existing_user_reaches(client, capsys):
    call_command("accounts", "user-create", "bob", "--password-env", "PW")
    _sign_in(client, "bob")
    assert _status(client, "/reviews/") == 403
    assert _status(client, "/reviews/rounds/") == 403
    assert _status(client, "/agent-runs/") == 403

    call_command("accounts", "role-add", "bob", "reviewer")
    assert "bob is now reviewer (roles: reviewer)" in capsys.readouterr().out
    assert _sign_in(client, "bob") == "/reviews/"  # a reviewer lands on their queue
    assert _status(client, "/reviews/") == 200
    assert _status(client, "/reviews/rounds/") == 403

    call_command("accounts", "role-add", "bob", "organiser")
    assert "roles: organiser, reviewer, staff" in capsys.readouterr().out
    _sign_in(client, "bob")
    assert _status(client, "/reviews/rounds/") == 200
    assert _status(client, "/agent-runs/") == 200
    assert _status(client, "/admin/judging/judge/") == 200

    call_command("accounts", "role-remove", "bob", "organiser")
    call_command("accounts", "role-remove", "bob", "reviewer")
    assert "roles: none" in capsys.readouterr().out
    assert not User.objects.get(username="bob").is_staff
    _sign_in(client, "bob")
    for url in ("/reviews/", "/reviews/rounds/", "/agent-runs/"):
        assert _status(client, url) == 403, url
    assert client.get("/admin/")["Location"].startswith("/admin/login/")

    with pytest.raises(CommandError, match="invalid choice"):
        call_command("accounts", "role-add", "bob", "wizard")
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("accounts", "role-add", "nobody", "reviewer")


def test_superuser_is_an_organiser(client):
    call_command("accounts", "user-create", "root", "--password-env", "PW")
    call_command("accounts", "role-add", "root", "superuser")
    _sign_in(client, "root")
    for url, expected in ORGANISER_PAGES.items():
        assert _status(client, url) == expected, url
    form = client.get(
        f"/admin/auth/user/{User.objects.get(username='root').pk}/change/"
    ).content.decode()
    assert 'name="is_superuser"' in form


def test_a_visitor_is_sent_to_the_one_sign_in_page(client):
    for url in ("/reviews/", "/reviews/rounds/", "/agent-runs/", "/account/"):
        answer = client.get(url)
        assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")
    # The reviewers' and the admin's sign-in addresses lead there too, keeping `next`.
    assert client.get("/reviews/login/")["Location"] == "/accounts/login/?next=%2Freviews%2F"
    assert client.get("/admin/")["Location"] == "/admin/login/?next=/admin/"
    assert (
        client.get("/admin/login/?next=/admin/")["Location"] == "/accounts/login/?next=%2Fadmin%2F"
    )
    call_command("accounts", "user-create", "olga", "--organiser", "--password-env", "PW")
    assert _sign_in(client, "olga", "/admin/") == "/admin/"


# Outside the roles module (and the admin's user form, which edits the flags),
# no code decides a role by itself.
_ROLE_CHECKS = re.compile(
    r"\.is_staff\b|staff_member_required|IsAdminUser|groups__name=|"
    r"class Is(Organiser|Reviewer|Staff)\w*\(|def (organiser|reviewer)_required"
)
_ALLOWED = {"benchmark/roles.py", "benchmark/admin.py"}


def test_roles_are_decided_in_one_module():
    found = []
    for path in REPO.glob("*/**/*"):
        rel = path.relative_to(REPO).as_posix()
        # The site's own sources only: not the tests, nor build output (a wheel's
        # build/lib/ copy of the apps), collected static files or data.
        if rel.startswith(
            ("tests/", ".venv/", "client/", "perf/", "node_modules/", "build/", "var/")
        ) or rel.startswith(("staticfiles/", "media/")):
            continue
        if path.suffix not in (".py", ".html") or rel in _ALLOWED or "/migrations/" in rel:
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if _ROLE_CHECKS.search(line):
                found.append(f"{rel}:{number}: {line.strip()}")
    assert found == []
