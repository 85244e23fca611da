"""An API fuzzer (schemathesis) against `/api/schema/` on the live test server,
anonymously and with a token: no request it makes may answer a 5xx (issue 20,
"keep it that way"). Examples per operation are few so that the suite stays
quick; each run draws new ones. (Hypothesis drives each operation directly:
schemathesis' pytest plugin does not load under this pytest.)"""

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from benchmark.accounts import api_token_create
from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory, UserFactory

EXAMPLES = 20


@pytest.fixture
def api_schema(live_server, transactional_db, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            name: "100000/minute" for name in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
        },
    }
    # A little data, so that ids and slugs the fuzzer tries can hit real rows.
    TaskFactory()
    owner = UserFactory()
    AgentFactory(team=TeamFactory(members=[owner]))
    return schemathesis.openapi.from_url(f"{live_server.url}/api/schema/")


def _server_errors(schema, headers: dict[str, str]) -> list[str]:
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case) -> None:
            case.call_and_validate(headers=headers, checks=[not_a_server_error])

        try:
            fuzz()
        except Exception as exc:  # noqa: BLE001 - every operation is tried; all are reported
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}"[:2000])
    return failures


def test_no_anonymous_request_is_a_server_error(api_schema):
    failures = _server_errors(api_schema, {})
    assert not failures, "\n\n".join(failures)


def test_no_request_with_a_token_is_a_server_error(api_schema):
    token = api_token_create(user=UserFactory(), name="fuzz").key
    failures = _server_errors(api_schema, {"Authorization": f"Token {token}"})
    assert not failures, "\n\n".join(failures)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/api/experiments/?submission=-1.1e+296",
        "/api/judgments/?submission=99999999999999999999999",
        "/api/tasks/?year=1e400",
        "/api/agreement/?judge=a%00b",
        "/api/tasks/?search=%00",
    ],
)
def test_what_the_fuzzer_found_answers_400(client, url):
    assert client.get(url).status_code == 400
