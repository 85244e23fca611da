"""Without a broker (the embedded defaults) judging runs after the answer, in
the web process's background threads: whoever queued it never waits for a
judge, and the rows show the progress as a worker's would."""

import threading

import pytest

from common.tasks import background_wait
from judging.models import Judgment, JudgmentStatus, SubmissionJudgingState
from judging.selectors import submission_judging_state
from submissions.signals import submission_ready
from tests.support.fake_llm import answer

from .helpers import review_answer

pytestmark = pytest.mark.django_db(transaction=True)


def test_without_a_broker_a_new_submission_is_judged_after_the_answer_not_during_it(
    settings, submission, rubrics, judge_for, fake_llm, celery_eager
):
    settings.BACKGROUND_THREADS = 2
    judge_for("judge-a")
    gate = threading.Event()

    def held(body):
        # The judge answers only once the test has seen the sender come back
        # (a minute at most: without background threads the sender waits here).
        gate.wait(60)
        return answer(review_answer("end2end"))

    fake_llm.default = held
    try:
        # What an upload does once its rows are committed.
        submission_ready.send(sender=None, submission_id=submission.pk)

        statuses = set(Judgment.objects.values_list("status", flat=True))
        assert statuses and statuses <= {JudgmentStatus.QUEUED, JudgmentStatus.RUNNING}
        assert (
            submission_judging_state(submission_id=submission.pk) == SubmissionJudgingState.JUDGING
        )
    finally:
        gate.set()
        assert background_wait(timeout=120)

    assert set(Judgment.objects.values_list("status", flat=True)) == {JudgmentStatus.DONE}
    assert submission_judging_state(submission_id=submission.pk) == SubmissionJudgingState.JUDGED
