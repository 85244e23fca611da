"""An API fuzzer (schemathesis) against `/api/schema/` on the live test server,
anonymously and with a token: no request it makes may answer a 5xx (issue 20,
"keep it that way"). It fuzzes a database holding the imported MLR-Bench
sample (runs, imported judgments with hallucination reviews, human reviews),
and half of its path parameters are ids and names of rows that exist, so every
object endpoint meets real data (issue 27: a hallucination review broke one).
Examples per operation are few so that the suite stays quick; each run draws
new ones. (Hypothesis drives each operation directly: schemathesis' pytest
plugin does not load under this pytest.)"""

from io import StringIO

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from benchmark.accounts import api_token_create
from benchmark.models import Agent, Task
from judging.models import Judgment, JudgmentKind
from submissions.models import Submission
from tests.benchmark.factories import UserFactory

EXAMPLES = 15


def real_values() -> dict[str, list]:
    """Values of the schema's path parameters that name rows of the sample."""
    submissions = list(Submission.objects.values_list("pk", flat=True))
    # The hallucination reviews' submissions first: the rows that once answered 500.
    reviewed = list(
        Judgment.objects.filter(kind=JudgmentKind.HALLUCINATION).values_list(
            "submission_id", flat=True
        )
    )
    judgments = list(Judgment.objects.values_list("pk", flat=True)[:200])
    assert reviewed and judgments, "the sample was not imported"
    return {
        "id": sorted(set(reviewed + submissions[:200] + judgments)),
        "submission_id": sorted(set(reviewed + submissions[:200])),
        "judgment_id": judgments,
        "slug": list(
            Task.objects.filter(submissions__isnull=False).distinct().values_list("slug", flat=True)
        ),
        "name": list(Agent.objects.values_list("name", flat=True)),
    }


@pytest.fixture
def api_schema(live_server, transactional_db, settings, media_root):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            name: "100000/minute" for name in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
        },
    }
    call_command(
        "import_mlrbench", django_settings.MLRBENCH_DATA, stdout=StringIO(), stderr=StringIO()
    )
    return schemathesis.openapi.from_url(f"{live_server.url}/api/schema/")


def _server_errors(schema, headers: dict[str, str], real: dict[str, list]) -> list[str]:
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(), data=st.data())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case, data) -> None:
            for name in list(case.path_parameters or {}):
                if real.get(name) and data.draw(st.booleans()):
                    case.path_parameters[name] = data.draw(st.sampled_from(real[name]))
            case.call_and_validate(headers=headers, checks=[not_a_server_error])

        try:
            fuzz()
        except Exception as exc:  # noqa: BLE001 - every operation is tried; all are reported
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}"[:2000])
    return failures


def test_no_request_anonymous_or_with_a_token_is_a_server_error(api_schema):
    real = real_values()
    token = api_token_create(user=UserFactory(), name="fuzz").key
    failures = _server_errors(api_schema, {}, real)
    failures += _server_errors(api_schema, {"Authorization": f"Token {token}"}, real)
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


@pytest.mark.django_db
def test_a_nul_in_a_posted_field_answers_400(client):
    token = api_token_create(user=UserFactory(), name="nul").key
    response = client.post(
        "/api/submissions/",
        {"agent": "a\x00b", "task": "t", "stage": "paper"},
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert response.status_code == 400
