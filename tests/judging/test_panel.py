"""The judgments panel that the submission page includes, its fragment and page,
the JSON the page polls, and the organiser's re-run (staff only)."""

import re
from decimal import Decimal

import pytest
from django.template.loader import render_to_string
from django.test import RequestFactory

from judging.models import DimensionScore, Judgment, JudgmentStatus
from judging.rubrics import DEFAULT_RUBRICS
from judging.selectors import judgments_panel_context
from submissions.models import Stage
from tests.errors import error_messages
from tests.judging.factories import JudgeFactory
from tests.submissions.factories import SubmissionFactory, artifact_add

pytestmark = pytest.mark.django_db


def judged(submission, judge, rubric, scores: dict, **fields) -> Judgment:
    judgment = Judgment.objects.create(
        submission=submission, judge=judge, rubric=rubric, status=JudgmentStatus.DONE, **fields
    )
    for dimension, score in scores.items():
        DimensionScore.objects.create(
            judgment=judgment,
            dimension=dimension,
            score=score,
            justification=f"{judge.name} on {dimension}: because.",
        )
    return judgment


def experiment_scores(score: int, overall: int) -> dict:
    keys = [d.key for d in DEFAULT_RUBRICS["experiment"].dimensions]
    return {key: (overall if key == "Overall" else score) for key in keys}


@pytest.fixture
def sample(rubrics):
    """An experiment submission: two judges done (6 and 9 overall), one failed."""
    submission = SubmissionFactory(stage=Stage.EXPERIMENT)
    artifact_add(submission, "results/results.md", "results", "We ran it.")
    rubric = rubrics["experiment"]
    judged(
        submission,
        JudgeFactory(name="judge-a"),
        rubric,
        experiment_scores(5, 6),
        strengths=["Honest analysis"],
        weaknesses=["Synthetic data only"],
        has_hallucination=True,
        hallucination_details="Table 2 is not in the log.",
        input_tokens=1000,
        output_tokens=200,
        cost_usd=Decimal("0.012300"),
        attempts=1,
    )
    judged(
        submission,
        JudgeFactory(name="judge-b"),
        rubric,
        experiment_scores(8, 9),
        has_hallucination=False,
        attempts=1,
    )
    failed = Judgment.objects.create(
        submission=submission,
        judge=JudgeFactory(name="judge-c"),
        rubric=rubric,
        status=JudgmentStatus.FAILED,
        error="rate limited by http://x: gave up after 5 attempts",
        attempts=5,
    )
    return submission, failed


def row_cells(html: str, testid: str) -> list[str]:
    row = re.search(rf'data-testid="{testid}">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]


def render_panel(submission, user) -> str:
    request = RequestFactory().get(f"/submissions/{submission.pk}/")
    request.user = user
    return render_to_string(
        "judging/_judgments_panel.html",
        {"judging": judgments_panel_context(submission)},
        request=request,
    )


def test_the_panel_shows_judges_side_by_side_with_the_mean_and_the_stage_score(sample, admin_user):
    submission, failed = sample

    html = render_panel(submission, admin_user)

    assert row_cells(html, "dimension-Overall") == ["Overall", "6", "9", "—", "7.5"]
    assert row_cells(html, "dimension-Soundness") == ["Soundness", "5", "8", "—", "6.5"]
    assert 'data-testid="stage-score">7.5<' in html
    assert "3 of 3 judgments finished" in html and "1 failed" in html
    assert "judge-a on Insightfulness: because." in html
    assert "Honest analysis" in html and "Synthetic data only" in html
    assert "<strong>Fabricated content:</strong> yes: Table 2 is not in the log." in html
    assert "<strong>Fabricated content:</strong> no" in html
    assert "This judge failed: rate limited by http://x: gave up after 5 attempts" in html
    assert f'action="/judgments/{failed.pk}/rerun/"' in html
    assert "Re-run judge-c" in html
    assert "$0.0123" in html
    assert 'data-status-url="/api/submissions/' in html and "js/judging" in html


def test_visitors_see_the_failure_but_no_re_run_button(sample, django_user_model):
    submission, _ = sample
    visitor = django_user_model.objects.create_user("visitor", password="x")

    html = render_panel(submission, visitor)

    assert "This judge failed" in html
    assert "Re-run" not in html


def test_an_active_judge_that_has_not_run_yet_is_shown_as_not_queued(rubrics):
    submission = SubmissionFactory(stage=Stage.PAPER)
    JudgeFactory(name="new-judge")
    JudgeFactory(name="retired", is_active=False)

    context = judgments_panel_context(submission)

    (panel,) = context["panels"]
    assert [(row.judge.name, row.status) for row in panel.rows] == [("new-judge", "not_queued")]
    assert not context["complete"]


def test_no_judges_no_panel(rubrics):
    submission = SubmissionFactory(stage=Stage.METHOD)
    JudgeFactory(name="judge-a", is_active=False)

    html = render_to_string(
        "judging/_judgments_panel_body.html", {"judging": judgments_panel_context(submission)}
    )

    assert "No judge has been asked to score this submission." in html


def test_the_status_endpoint_gives_progress_scores_and_stage_score(client, sample):
    submission, failed = sample

    data = client.get(f"/api/submissions/{submission.pk}/judgments/").json()

    assert data["progress"] == {"queued": 0, "running": 0, "done": 2, "failed": 1, "total": 3}
    assert data["complete"] is True
    assert data["stage_score"] == 7.5
    assert data["stage_scores"]["with_code"]["Soundness"] == 6.5
    by_judge = {j["judge"]: j for j in data["judgments"]}
    assert by_judge["judge-a"]["scores"]["Overall"] == {
        "score": 6.0,
        "justification": "judge-a on Overall: because.",
    }
    assert by_judge["judge-a"]["has_hallucination"] is True
    assert by_judge["judge-a"]["cost_usd"] == 0.0123
    assert by_judge["judge-c"]["status"] == "failed"
    assert by_judge["judge-c"]["error"].startswith("rate limited")
    assert data["signature"]
    assert client.get("/api/submissions/999999/judgments/").status_code == 404


def test_the_fragment_and_the_page_render_the_panel(client, admin_client, sample):
    submission, _ = sample

    fragment = client.get(
        f"/submissions/{submission.pk}/judgments/panel/", {"next": f"/submissions/{submission.pk}/"}
    )
    page = client.get(f"/submissions/{submission.pk}/judgments/")

    assert fragment.status_code == 200 and page.status_code == 200
    assert b'<section class="judgments-panel"' not in fragment.content
    assert b'data-testid="stage-score">7.5<' in fragment.content
    assert b'id="judgments-panel"' in page.content
    # Swapped into the submission page, the re-run button returns to that page.
    staff_fragment = admin_client.get(
        f"/submissions/{submission.pk}/judgments/panel/", {"next": f"/submissions/{submission.pk}/"}
    )
    assert f'name="next" value="/submissions/{submission.pk}/"'.encode() in staff_fragment.content
    foreign = admin_client.get(
        f"/submissions/{submission.pk}/judgments/panel/", {"next": "https://evil.example/"}
    )
    assert b"evil.example" not in foreign.content
    assert (
        f'name="next" value="/submissions/{submission.pk}/judgments/"'.encode() in foreign.content
    )
    assert client.get("/submissions/999999/judgments/").status_code == 404


def test_only_staff_can_re_run_a_judgment_through_the_api(
    client, sample, django_user_model, admin_user
):
    submission, failed = sample
    url = f"/api/judgments/{failed.pk}/rerun/"

    assert client.post(url).status_code == 403
    client.force_login(django_user_model.objects.create_user("someone", password="x"))
    assert client.post(url).status_code == 403
    failed.refresh_from_db()
    assert failed.status == JudgmentStatus.FAILED

    client.force_login(admin_user)
    response = client.post(url)

    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    failed.refresh_from_db()
    assert (failed.status, failed.error, failed.attempts) == (JudgmentStatus.QUEUED, "", 0)
    done = Judgment.objects.filter(status=JudgmentStatus.DONE).first()
    conflict = client.post(f"/api/judgments/{done.pk}/rerun/")
    assert conflict.status_code == 409
    assert "only a failed judgment can be re-run" in error_messages(conflict)[None][0]
    assert client.post("/api/judgments/999999/rerun/").status_code == 404


def test_staff_can_queue_the_missing_judges_through_the_api(client, rubrics, admin_user):
    submission = SubmissionFactory(stage=Stage.PAPER)
    JudgeFactory(name="judge-a")
    url = f"/api/submissions/{submission.pk}/judgments/"
    assert client.post(url).status_code == 403

    client.force_login(admin_user)
    response = client.post(url)

    assert response.status_code == 202
    assert response.json()["created"] == 1
    assert Judgment.objects.get().status == JudgmentStatus.QUEUED


def test_the_re_run_button_queues_again_and_returns_to_the_page(client, sample, admin_user):
    submission, failed = sample
    page = f"/submissions/{submission.pk}/judgments/"

    assert client.get(f"/judgments/{failed.pk}/rerun/").status_code == 405
    response = client.post(f"/judgments/{failed.pk}/rerun/", {"next": page})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    failed.refresh_from_db()
    assert failed.status == JudgmentStatus.FAILED

    client.force_login(admin_user)
    response = client.post(f"/judgments/{failed.pk}/rerun/", {"next": page}, follow=True)

    assert response.redirect_chain[-1][0] == page
    assert b"Judge judge-c queued again." in response.content
    failed.refresh_from_db()
    assert failed.status == JudgmentStatus.QUEUED
    # A foreign `next` is never followed.
    other = client.post(f"/judgments/{failed.pk}/rerun/", {"next": "https://evil.example/"})
    assert other["Location"] == "/"


def test_the_openapi_schema_describes_the_judging_endpoints(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()

    assert "/api/submissions/{submission_id}/judgments/" in schema["paths"]
    assert "/api/judgments/{judgment_id}/rerun/" in schema["paths"]
