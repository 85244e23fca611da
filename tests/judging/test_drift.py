"""Judge drift: a seeded sample of finished judgments scored again into a
drift record (the judgments stay as they were), with the change per
dimension, and a flag past the threshold."""

import io

import pytest
from django.core.management import call_command

from judging.models import DriftCheck, Judgment, JudgmentStatus
from judging.services.drift import drift_sample, drift_summary
from judging.services.run import judgment_run
from tests.support.fake_llm import answer

from .conftest import end2end_submission
from .helpers import review_answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(rubrics, judge_for, fake_llm):
    judge = judge_for("judge-a")
    judgments = []
    for i in range(4):
        submission = end2end_submission(task_slug=f"iclr2025_task{i}")
        judgments.append(
            Judgment.objects.create(submission=submission, judge=judge, rubric=rubrics["end2end"])
        )
    fake_llm.script(*[answer(review_answer("end2end", score=6, overall=7)) for _ in judgments])
    for judgment in judgments:
        judgment_run(judgment_id=judgment.pk)
    assert set(Judgment.objects.values_list("status", flat=True)) == {JudgmentStatus.DONE}
    return judge


def test_drift_rescoring_keeps_the_judgments_and_records_the_change(finished, fake_llm, settings):
    settings.JUDGE_DRIFT_THRESHOLD = 0.5
    # Now the judge scores Overall 3 points lower, the rest 1 lower.
    fake_llm.script(*[answer(review_answer("end2end", score=5, overall=4)) for _ in range(3)])
    out = io.StringIO()

    call_command("judge_drift", "--judge", "judge-a", "--sample", "3", "--seed", "1", stdout=out)

    check = DriftCheck.objects.get()
    assert check.n_rescored == 3 and check.n_failed == 0
    assert check.mean_abs_change["Overall"] == pytest.approx(3.0)
    assert check.mean_abs_change["Clarity"] == pytest.approx(1.0)
    assert check.n_changed_2plus == {
        "Clarity": 0,
        "Novelty": 0,
        "Overall": 3,
        "Significance": 0,
        "Soundness": 0,
    }
    assert check.flagged
    assert check.rescores.count() == 3
    assert {r.scores["Overall"] for r in check.rescores.all()} == {4.0}
    # The judgments themselves are untouched.
    assert set(
        Judgment.objects.filter(scores__dimension="Overall").values_list("scores__score", flat=True)
    ) == {7}
    assert "Overall: mean |change| 3.000, 3 moved by 2 or more" in out.getvalue()
    assert "flagged" in out.getvalue()


def test_the_same_seed_draws_the_same_sample_and_imported_judgments_never_qualify(finished):
    first = [j.pk for j in drift_sample(judge=finished, size=2, seed=5)]
    assert first == [j.pk for j in drift_sample(judge=finished, size=2, seed=5)]
    Judgment.objects.update(imported=True)
    assert drift_sample(judge=finished, size=2, seed=5) == []


def test_a_steady_judge_is_not_flagged():
    mean, big = drift_summary([({"Overall": 7}, {"Overall": 7}), ({"Overall": 6}, {"Overall": 7})])
    assert mean == {"Overall": 0.5} and big == {"Overall": 0}
