"""Issue 37, "fast deletes back": no receiver listens to every model's
`post_delete`, so deleting a judgment's scores, or the judgment, is a few
statements whatever the number of rows, not a SELECT per row."""

import pytest
from django.db.models.signals import post_delete, pre_delete

from judging.models import DimensionScore, HallucinationFinding, Judgment
from tests.leaderboard.factories import (
    AgentFactory,
    JudgeFactory,
    SubmissionFactory,
    judge_submission,
)

pytestmark = pytest.mark.django_db

ROWS = 40


@pytest.fixture
def judgment() -> Judgment:
    submission = SubmissionFactory(agent=AgentFactory(name="alpha"), stage="paper")
    judgment = judge_submission(
        submission,
        JudgeFactory(name="claude-judge"),
        {f"Dimension {n}": 5 for n in range(ROWS)},
    )
    HallucinationFinding.objects.bulk_create(
        HallucinationFinding(judgment=judgment, position=n, type="", description="d", evidence="")
        for n in range(ROWS)
    )
    return judgment


def test_no_receiver_listens_to_the_deletes_of_scores_or_judgments():
    for model in (DimensionScore, HallucinationFinding, Judgment):
        assert not pre_delete.has_listeners(model), model
        assert not post_delete.has_listeners(model), model


def test_deleting_a_judgments_scores_is_one_statement(judgment, django_assert_max_num_queries):
    with django_assert_max_num_queries(1):
        deleted, _ = DimensionScore.objects.filter(judgment=judgment).delete()
    assert deleted == ROWS


def test_deleting_a_judgment_takes_a_bounded_number_of_statements(
    judgment, django_assert_max_num_queries
):
    # The judgment, then one DELETE per table that points at it: not one per row.
    with django_assert_max_num_queries(12):
        judgment.delete()
    assert not DimensionScore.objects.filter(judgment_id=judgment.pk).exists()
    assert not HallucinationFinding.objects.filter(judgment_id=judgment.pk).exists()
