"""A judge reads the submission's paper, code and log from the S3 bucket (the
loopback moto server) and nothing is written under MEDIA_ROOT."""

import json

import pytest

from judging.models import Judgment, JudgmentStatus
from judging.services.run import judgment_run
from tests.support.fake_llm import answer

from .conftest import end2end_submission
from .helpers import review_answer

pytestmark = [pytest.mark.django_db, pytest.mark.backends]


def test_a_judge_reads_the_code_and_the_log_from_the_bucket(
    s3_storage, media_root, rubrics, judge_for, fake_llm
):
    submission = end2end_submission()
    judgment = Judgment.objects.create(
        submission=submission, judge=judge_for("judge-a"), rubric=rubrics["end2end"]
    )
    fake_llm.script(answer(review_answer("end2end", score=6, overall=7, confidence=4)))

    judgment_run(judgment_id=judgment.pk)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.DONE, judgment.error
    assert f"submissions/{submission.pk}/claude_code/run.py" in s3_storage.keys("")
    prompt = json.dumps(fake_llm.requests[0].body)
    assert "We co-evolve values." in prompt
    assert "print('accuracy', 0.91)" in prompt and "epoch 1 accuracy 0.91" in prompt
    assert [p for p in media_root.rglob("*") if p.is_file()] == []
