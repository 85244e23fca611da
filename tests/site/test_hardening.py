"""Abuse limits and deployment (issue 20, findings 7, 8 and 9): a made-up
X-Forwarded-For buys no fresh budget, every anonymous page and endpoint is
throttled, repeated failed sign-ins lock out, every page has a CSP with a
nonce for scripts, `check --deploy` is clean with the documented production
settings, and a bad token is a 401 everywhere."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tests.benchmark.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def _forged() -> dict[str, str]:
    return {"HTTP_X_FORWARDED_FOR": f"10.{uuid.uuid4().int % 250}.0.1"}


def test_a_made_up_forwarded_for_header_buys_no_fresh_api_budget(client, rates):
    rates(public_api="3/minute")
    codes = [client.get("/api/leaderboard/", **_forged()).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]


@pytest.mark.parametrize(
    "url", ["/api/tasks/", "/api/submissions/", "/api/agreement/", "/api/schema/"]
)
def test_every_anonymous_endpoint_is_throttled(client, rates, url):
    rates(public_api="2/minute")
    codes = [client.get(url).status_code for _ in range(3)]
    assert codes[-1] == 429, codes


@pytest.mark.parametrize("url", ["/", "/tasks/", "/submissions/", "/leaderboard/", "/agreement/"])
def test_every_anonymous_page_is_throttled_but_not_healthz(client, rates, url):
    TaskFactory()
    rates(pages="2/minute")
    codes = [client.get(url, **_forged()).status_code for _ in range(3)]
    assert codes[:2] == [200, 200] and codes[2] == 429, codes
    assert client.get("/healthz").status_code in (200, 503)


def test_signed_in_users_are_not_throttled(client, rates):
    rates(pages="1/minute", public_api="1/minute")
    client.force_login(UserFactory())
    assert [client.get("/tasks/").status_code for _ in range(3)] == [200, 200, 200]


def test_repeated_failed_sign_ins_lock_the_account_out(client, settings):
    settings.AXES_FAILURE_LIMIT = 3
    UserFactory(username="ada", password="right-password")  # noqa: S106
    for _ in range(3):
        client.post("/accounts/login/", {"username": "ada", "password": "wrong"})
    locked = client.post("/accounts/login/", {"username": "ada", "password": "right-password"})
    assert locked.status_code in (403, 429)
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    "url", ["/", "/tasks/", "/leaderboard/", "/agreement/", "/api/docs/", "/accounts/login/"]
)
def test_every_page_has_a_content_security_policy_with_script_nonces(client, url):
    response = client.get(url)
    policy = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    # Scripts from the site, or inline only with the request's nonce.
    assert directives["script-src"] == "'self'" or directives["script-src"].startswith(
        "'self' 'nonce-"
    )
    assert "unsafe-inline" not in directives["script-src"]
    assert directives["style-src"] == "'self'"
    assert "<script>" not in response.content.decode()  # no inline script without a nonce


def test_check_deploy_is_clean_with_the_documented_production_settings(tmp_path):
    production = {
        "DEBUG": "0",
        "SECRET_KEY": "x7" + uuid.uuid4().hex + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "mlrbench.example.org",
        "SECURE_SSL_REDIRECT": "1",
        "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO=https",
        "SECURE_HSTS_SECONDS": "31536000",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
        "SECURE_HSTS_PRELOAD": "1",
        "SESSION_COOKIE_SECURE": "1",
        "CSRF_COOKIE_SECURE": "1",
    }
    example = (ROOT / ".env.example").read_text()
    for name in production:
        if name not in ("DEBUG", "SECRET_KEY", "ALLOWED_HOSTS"):
            assert f"# {name}=" in example, f"{name} is not documented in .env.example"
    env = {**os.environ, **production, "DJANGO_SETTINGS_MODULE": "mlrbench_site.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/tasks/"),
        ("get", "/api/leaderboard/"),
        ("get", "/api/agreement/"),
        ("get", "/api/submissions/"),
        ("post", "/api/submissions/"),
        ("get", "/api/reviews/assignments/"),
    ],
)
def test_a_bad_token_answers_401_everywhere(client, method, url):
    response = getattr(client, method)(url, HTTP_AUTHORIZATION="Token not-a-real-token")
    assert response.status_code == 401, (url, response.status_code)
    assert response["WWW-Authenticate"].startswith("Token")
    assert response.json()["errors"][0]["code"] == "authentication_failed"
    assert settings.NUM_PROXIES == 0


def test_concurrent_requests_from_one_client_get_exactly_the_rate(rates):
    """Issue 32, finding 13: sixteen clients at once from one address; each
    request is one atomic increment, so exactly the rate passes (DRF's
    read-modify-write history let every racing request through)."""
    import threading

    from common.throttling import rate_hit

    rates(public_api="100/minute")
    allowed: list[bool] = []
    start = threading.Barrier(16)

    def client_thread() -> None:
        start.wait()
        for _ in range(25):
            allowed.append(rate_hit(scope="public_api", ident="10.7.7.7").allowed)

    threads = [threading.Thread(target=client_thread) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(allowed) == 400
    assert sum(allowed) == 100
    refused = rate_hit(scope="public_api", ident="10.7.7.7")
    assert not refused.allowed and 0 < refused.retry_after <= 60
