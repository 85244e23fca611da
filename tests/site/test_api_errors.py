"""Every API error, whichever app answers it, has one body:
`{"errors": [{"field", "code", "message"}]}` with the right status and
headers; the OpenAPI schema says so; the HTML forms show the same messages."""

import pytest

from benchmark.accounts import api_token_create
from submissions.models import Submission
from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory, UserFactory
from tests.benchmark.runs import PAPER, SAMPLE_TASK, zip_entries
from tests.errors import error_items
from tests.submissions.factories import SubmissionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    user = UserFactory()
    AgentFactory(name="my-agent", team=TeamFactory(members=[user]), o4_mini=True)
    TaskFactory(slug=SAMPLE_TASK)
    return user


def _upload(client, archive, **headers):
    with archive.open("rb") as handle:
        return client.post(
            "/api/submissions/",
            {"agent": "my-agent", "task": SAMPLE_TASK, "stage": "paper", "archive": handle},
            **headers,
        )


def test_an_application_error_a_conflict_and_a_401_answer_the_one_shape(
    client, media_root, owner, tmp_path
):
    token = {"HTTP_AUTHORIZATION": f"Token {api_token_create(user=owner, name='t').key}"}
    bad = zip_entries(tmp_path / "bad.zip", {"main.py": b"print(1)"})
    good = zip_entries(tmp_path / "good.zip", {"results/paper.md": PAPER})

    anonymous = _upload(client, good)
    refused = _upload(client, bad, **token)
    first = _upload(client, good, **token)
    again = _upload(client, good, **token)

    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == 'Token realm="api"'
    assert [(i["field"], i["code"]) for i in error_items(anonymous)] == [
        (None, "not_authenticated")
    ]
    assert refused.status_code == 400
    ((item,),) = [error_items(refused)]
    assert (item["field"], item["code"]) == ("archive", "archive_refused")
    assert "the paper stage needs a paper" in item["message"]
    assert again.status_code == 409
    (conflict,) = error_items(again)
    assert (conflict["field"], conflict["code"]) == ("archive", "duplicate_submission")
    # The existing submission stays beside the errors, as clients read it.
    assert again.json()["id"] == first.json()["id"] == Submission.objects.get().pk
    assert again.json()["url"] == first.json()["url"]


def test_403_404_405_and_drf_validation_errors_answer_the_one_shape(client, admin_client):
    TaskFactory(slug="iclr2025_a")
    client.force_login(UserFactory())

    forbidden = client.post("/api/judgments/1/rerun/")
    missing = admin_client.post("/api/judgments/999999/rerun/")
    unknown_task = client.get("/api/tasks/iclr2025_nope/")
    method = admin_client.delete("/api/tasks/iclr2025_a/")
    bad_filter = client.get("/api/tasks/", {"conference": "aaai"})

    assert forbidden.status_code == 403
    assert error_items(forbidden)[0]["code"] == "permission_denied"
    assert missing.status_code == 404
    assert error_items(missing) == [
        {"field": None, "code": "not_found", "message": "no such judgment"}
    ]
    assert (unknown_task.status_code, error_items(unknown_task)[0]["code"]) == (404, "not_found")
    assert (method.status_code, error_items(method)[0]["code"]) == (405, "method_not_allowed")
    assert bad_filter.status_code == 400
    assert [(i["field"], i["code"]) for i in error_items(bad_filter)] == [
        ("conference", "invalid_choice")
    ]


def test_a_throttled_client_gets_429_with_retry_after_and_the_one_shape(client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"public_api": "1/minute", "export": "1/minute"},
    }
    assert client.get("/api/leaderboard/").status_code == 200

    throttled = client.get("/api/leaderboard/")

    assert throttled.status_code == 429 and int(throttled["Retry-After"]) > 0
    assert error_items(throttled)[0]["code"] == "throttled"


def test_the_schema_documents_the_error_body_on_the_4xx_answers(client):
    schema = client.get("/api/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    paths = schema["paths"]

    def ref(response):
        return response["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]

    assert components["Error"]["required"] == ["errors"]
    item = components[components["Error"]["properties"]["errors"]["items"]["$ref"].rsplit("/")[-1]]
    assert set(item["properties"]) == {"field", "code", "message"}
    assert item["properties"]["field"]["nullable"] is True
    upload = paths["/api/submissions/"]["post"]["responses"]
    assert ref(upload["400"]) == ref(upload["401"]) == ref(upload["403"]) == "Error"
    assert ref(upload["409"]) == "DuplicateSubmissionError"
    assert {"errors", "id", "url"} <= set(components["DuplicateSubmissionError"]["properties"])
    board = paths["/api/leaderboard/"]["get"]["responses"]
    assert ref(board["400"]) == ref(board["4XX"]) == "Error"
    assert "Retry-After" in board["429"]["headers"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            assert ref(operation["responses"]["4XX"]) in components, (path, method)


def test_the_upload_form_shows_the_services_message_as_the_api_does(
    client, media_root, owner, tmp_path
):
    good = zip_entries(tmp_path / "good.zip", {"results/paper.md": PAPER})
    token = {"HTTP_AUTHORIZATION": f"Token {api_token_create(user=owner, name='t').key}"}
    _upload(client, good, **token)
    (api_item,) = error_items(_upload(client, good, **token))
    client.force_login(owner)
    form = {"agent": owner.teams.get().agents.get().pk, "task": SAMPLE_TASK, "stage": "paper"}

    with good.open("rb") as handle:
        page = client.post("/submissions/new/", {**form, "archive": handle})
    with good.open("rb") as handle:
        scripted = client.post(
            "/submissions/new/", {**form, "archive": handle}, HTTP_ACCEPT="application/json"
        )

    assert page.status_code == 400
    assert api_item["message"] in page.content.decode()
    assert scripted.status_code == 409
    assert error_items(scripted) == [api_item]
    assert scripted.json()["existing_url"] == Submission.objects.get().get_absolute_url()


def test_a_queue_with_nothing_to_do_is_a_409_with_its_counts_beside_the_errors(admin_client):
    submission = SubmissionFactory()

    response = admin_client.post(f"/api/submissions/{submission.pk}/judgments/")

    assert response.status_code == 409
    (item,) = error_items(response)
    assert (item["field"], item["code"]) == (None, "nothing_queued")
    assert "no active judge" in item["message"]
    body = response.json()
    assert (body["created"], body["requeued"], body["skipped"]) == (0, 0, [item["message"]])


def test_an_unknown_api_path_answers_the_error_body_and_a_page_stays_a_page(client):
    response = client.get("/api/no-such-endpoint/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json() == {
        "errors": [
            {
                "field": None,
                "code": "not_found",
                "message": "no API endpoint at /api/no-such-endpoint/",
            }
        ]
    }
    page = client.get("/no-such-page/")
    assert page.status_code == 404
    assert page["Content-Type"].startswith("text/html")
