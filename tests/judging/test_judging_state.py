"""A submission's judging state is derived from its judgments, never stored:
`Submission.status` is the intake's, and pages, the API, the admin and the
leaderboard read the one derivation in judging.selectors."""

import pytest

from judging.models import JudgingCondition, JudgmentStatus, SubmissionJudgingState
from judging.selectors import submission_judging_state, submissions_with_judging_state
from tests.judging.factories import JudgeFactory, JudgmentFactory
from tests.submissions.factories import SubmissionFactory

pytestmark = pytest.mark.django_db

QUEUED, RUNNING, DONE, FAILED = (
    JudgmentStatus.QUEUED,
    JudgmentStatus.RUNNING,
    JudgmentStatus.DONE,
    JudgmentStatus.FAILED,
)


@pytest.fixture
def judges(db):
    return JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")


def judged_by(submission, rubrics, *pairs):
    """Judgments of `submission`: (judge, status) or (judge, status, condition)."""
    for judge, status, *condition in pairs:
        JudgmentFactory(
            submission=submission,
            judge=judge,
            rubric=rubrics["end2end"],
            status=status,
            condition=condition[0] if condition else JudgingCondition.WITH_CODE,
        )
    return submission


def state(submission) -> str | None:
    return submission_judging_state(submission_id=submission.pk)


def test_the_state_in_each_situation(rubrics, judges):
    a, b = judges
    retired = JudgeFactory(name="retired", is_active=False)
    cases = {
        "no judgment": (judged_by(SubmissionFactory(), rubrics), "ready"),
        "one queued": (judged_by(SubmissionFactory(), rubrics, (a, QUEUED)), "judging"),
        "one running, one done": (
            judged_by(SubmissionFactory(), rubrics, (a, RUNNING), (b, DONE)),
            "judging",
        ),
        "every active judge done": (
            judged_by(SubmissionFactory(), rubrics, (a, DONE), (b, DONE)),
            "judged",
        ),
        "one done, one failed": (
            judged_by(SubmissionFactory(), rubrics, (a, DONE), (b, FAILED)),
            "judging",
        ),
        "one done, one active judge not asked yet": (
            judged_by(SubmissionFactory(), rubrics, (a, DONE)),
            "judging",
        ),
        "done, and a judging without code on its way": (
            judged_by(
                SubmissionFactory(),
                rubrics,
                (a, DONE),
                (b, DONE),
                (a, QUEUED, JudgingCondition.NO_CODE),
            ),
            "judging",
        ),
        "judged without code only": (
            judged_by(SubmissionFactory(), rubrics, (a, DONE, JudgingCondition.NO_CODE)),
            "ready",
        ),
        "a retired judge done, the active ones too": (
            judged_by(SubmissionFactory(), rubrics, (retired, FAILED), (a, DONE), (b, DONE)),
            "judged",
        ),
        "intake still running": (
            judged_by(SubmissionFactory(status="received"), rubrics, (a, DONE), (b, DONE)),
            "received",
        ),
        "intake failed": (SubmissionFactory(status="failed"), "failed"),
    }
    for name, (submission, expected) in cases.items():
        assert state(submission) == expected, name
    # The annotation for lists is the same derivation.
    listed = dict(
        submissions_with_judging_state(
            SubmissionFactory._meta.model.objects.filter(pk__in=[s.pk for s, _ in cases.values()])
        ).values_list("pk", "judging_state")  # type: ignore[misc]  # an annotation
    )
    assert listed == {s.pk: expected for s, expected in cases.values()}
    assert state(SubmissionFactory.build(pk=10**9)) is None


def test_without_an_active_judge_imported_reviews_make_it_judged(rubrics):
    imported = JudgeFactory(name="imported", is_active=False)
    done = judged_by(SubmissionFactory(), rubrics, (imported, DONE))
    failed = judged_by(SubmissionFactory(), rubrics, (imported, FAILED))
    assert state(done) == SubmissionJudgingState.JUDGED
    assert state(failed) == SubmissionJudgingState.JUDGING


def test_the_api_answers_the_derived_state_and_filters_on_it(client, rubrics, judges):
    a, b = judges
    judged = judged_by(SubmissionFactory(), rubrics, (a, DONE), (b, DONE))
    judging = judged_by(SubmissionFactory(), rubrics, (a, DONE), (b, RUNNING))
    ready = SubmissionFactory()
    received = SubmissionFactory(status="received")

    listed = client.get("/api/submissions/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert {row["id"]: row["status"] for row in rows} == {
        judged.pk: "judged",
        judging.pk: "judging",
        ready.pk: "ready",
        received.pk: "received",
    }
    for value, expected in (("judged", judged), ("judging", judging), ("ready", ready)):
        filtered = client.get(f"/api/submissions/?status={value}").json()
        rows = filtered["results"] if isinstance(filtered, dict) else filtered
        assert [row["id"] for row in rows] == [expected.pk], value
    assert client.get("/api/submissions/?status=nonsense").status_code == 400
    assert client.get(f"/api/submissions/{judged.pk}/").json()["status"] == "judged"
    progress = client.get(f"/api/submissions/{judging.pk}/judgments/").json()
    assert progress["submission_status"] == "judging"


def test_pages_and_the_admin_show_the_derived_state(client, admin_client, rubrics, judges):
    a, b = judges
    judged = judged_by(SubmissionFactory(), rubrics, (a, DONE), (b, DONE))
    judging = judged_by(SubmissionFactory(), rubrics, (a, QUEUED))

    page = client.get(judged.get_absolute_url()).content.decode()
    assert 'data-testid="submission-status">Judged<' in page
    page = client.get(f"/submissions/{judging.pk}/judgments/").content.decode()
    assert 'data-testid="submission-status">Judging<' in page

    changelist = "/admin/submissions/submission/"
    html = admin_client.get(f"{changelist}?state=judged").content.decode()
    assert f"/admin/submissions/submission/{judged.pk}/change/" in html
    assert f"/admin/submissions/submission/{judging.pk}/change/" not in html
    html = admin_client.get(changelist).content.decode()
    assert "Judging" in html and "Judged" in html
