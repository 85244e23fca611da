"""Triggers and the submission's judging status: a ready submission is queued
for every active judge after its transaction commits; it is judging until every
active judge is done, then judged; a failed judge can be re-run."""

import pytest
from django.db import transaction

from judging.models import Judgment, JudgmentStatus, Rubric, SubmissionJudgingState
from judging.selectors import submission_judging_state
from judging.services.queue import judgment_rerun, judgments_queue
from judging.services.rubrics import rubric_import
from submissions.models import Stage, SubmissionStatus
from submissions.signals import submission_ready
from tests.support.fake_llm import answer, error

from .conftest import end2end_submission
from .factories import JudgeFactory, SubmissionFactory
from .helpers import review_answer

pytestmark = pytest.mark.django_db


def state(submission) -> str | None:
    return submission_judging_state(submission_id=submission.pk)


def test_a_ready_submission_is_queued_for_each_active_judge_only_after_commit(
    submission, rubrics, judge_for, django_capture_on_commit_callbacks
):
    judge_for("judge-a")
    judge_for("judge-b")
    JudgeFactory(name="retired", is_active=False)

    with django_capture_on_commit_callbacks() as callbacks:
        submission_ready.send(sender=None, submission_id=submission.pk)

    judgments = Judgment.objects.filter(submission=submission)
    assert sorted(judgments.values_list("judge__name", "status")) == [
        ("judge-a", "queued"),
        ("judge-b", "queued"),
    ]
    assert {j.rubric for j in judgments} == {rubrics["end2end"]}
    # The messages go out on commit, not before (other apps add their own callbacks).
    enqueues = [c for c in callbacks if "judgments_enqueue" in c.__qualname__]
    assert len(enqueues) == 1
    assert state(submission) == SubmissionJudgingState.JUDGING


def test_the_whole_round_ready_judging_judged(
    submission, rubrics, judge_for, fake_llm, celery_eager, django_capture_on_commit_callbacks
):
    judge_for("judge-a")
    judge_for("judge-b")
    fake_llm.default = answer(review_answer("end2end"))

    with django_capture_on_commit_callbacks(execute=True):
        submission_ready.send(sender=None, submission_id=submission.pk)

    assert state(submission) == SubmissionJudgingState.JUDGED
    assert list(
        Judgment.objects.filter(submission=submission).values_list("status", flat=True)
    ) == ["done", "done"]


def test_a_failed_judge_keeps_the_submission_judging_until_it_is_re_run(
    submission, rubrics, judge_for, fake_llm, celery_eager, django_capture_on_commit_callbacks
):
    judge_for("judge-a")
    judge_for("judge-b", model="openai/flaky")

    def flaky(body):
        return (
            error(401, "bad key") if body["model"] == "flaky" else answer(review_answer("end2end"))
        )

    fake_llm.default = flaky
    with django_capture_on_commit_callbacks(execute=True):
        judgments_queue(submissions=[submission])
    failed = Judgment.objects.get(judge__name="judge-b")
    assert failed.status == JudgmentStatus.FAILED
    assert state(submission) == SubmissionJudgingState.JUDGING

    fake_llm.default = answer(review_answer("end2end"))
    with django_capture_on_commit_callbacks(execute=True):
        judgment_rerun(judgment_id=failed.pk)

    failed.refresh_from_db()
    assert failed.status == JudgmentStatus.DONE and failed.error == ""
    assert state(submission) == SubmissionJudgingState.JUDGED


def test_queueing_again_leaves_done_work_alone_unless_forced(
    submission, rubrics, judge_for, fake_llm, celery_eager, django_capture_on_commit_callbacks
):
    judge_for("judge-a")
    fake_llm.default = answer(review_answer("end2end"))
    with django_capture_on_commit_callbacks(execute=True):
        judgments_queue(submissions=[submission])

    again = judgments_queue(submissions=[submission])
    assert (again.created, again.requeued, again.unchanged) == (0, 0, 1)

    with django_capture_on_commit_callbacks(execute=True):
        forced = judgments_queue(submissions=[submission], force=True)
    assert forced.requeued == 1
    assert len(fake_llm.requests) == 2
    assert Judgment.objects.count() == 1


def test_a_new_rubric_version_makes_a_new_judgment_and_the_newest_counts(
    submission, rubrics, judge_for, fake_llm, celery_eager, django_capture_on_commit_callbacks
):
    from judging.selectors import stage_scores

    judge_for("judge-a")
    fake_llm.script(answer(review_answer("end2end", overall=4)))
    with django_capture_on_commit_callbacks(execute=True):
        judgments_queue(submissions=[submission])
    rubric_import(stage="end2end", prompt=rubrics["end2end"].prompt + "\nBe strict.")

    fake_llm.script(answer(review_answer("end2end", overall=8)))
    with django_capture_on_commit_callbacks(execute=True):
        report = judgments_queue(submissions=[submission])

    assert report.created == 1
    assert Judgment.objects.filter(submission=submission).count() == 2
    # The same judge counts once: its newest judgment.
    assert stage_scores(submission_ids=[submission.pk])[submission.pk]["Overall"] == 8


def test_submissions_that_are_not_ready_or_have_no_rubric_are_skipped(rubrics, judge_for):
    judge_for("judge-a")
    received = SubmissionFactory(status=SubmissionStatus.RECEIVED)
    method = SubmissionFactory(stage=Stage.METHOD)
    # Methods have a rubric (MLRC-Bench's dimensions); an organiser may retire it.
    Rubric.objects.filter(stage=Stage.METHOD).update(is_active=False)

    report = judgments_queue(submissions=[received, method])

    assert report.created == 0
    assert report.skipped == [
        f"submission {received.pk} is received",
        f"submission {method.pk}: no active rubric for the method stage",
    ]


def test_without_active_judges_nothing_is_queued(submission, rubrics):
    with transaction.atomic():
        report = judgments_queue(submissions=[end2end_submission(task_slug="iclr2025_x")])
    assert report.skipped == ["no active judge (add one with `manage.py judges add`)"]
    assert not Judgment.objects.exists()
