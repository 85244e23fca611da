"""One cache-generation helper (common.cache_generation) behind both the
leaderboard's and the agreement statistics' caches."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from common.cache_generation import CacheGeneration
from common.results import results_changed
from judging.models import DimensionScore
from leaderboard.caching import DATA_GENERATION
from leaderboard.payloads import leaderboard_payload
from leaderboard.selectors.board import LeaderboardQuery
from reviews.agreement_cache import AGREEMENT_GENERATION
from reviews.selectors import AgreementReviews, agreement_for_stage

from .factories import AgentFactory, JudgeFactory, SubmissionFactory, judge_submission

# These tests count every submitted review (an organiser's view).
SUBMITTED = AgreementReviews.SUBMITTED

pytestmark = pytest.mark.django_db


def test_a_generation_serves_its_entries_until_it_moves_on(django_capture_on_commit_callbacks):
    generation = CacheGeneration("test:family")
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert generation.cached(("a",), compute, timeout=60) == 1
    assert generation.cached(("a",), compute, timeout=60) == 1
    assert generation.cached(("b",), compute, timeout=60) == 2
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        generation.bump_on_commit()
        # Not before the writes are visible to other readers.
        assert generation.cached(("a",), compute, timeout=60) == 1
    assert generation.cached(("a",), compute, timeout=60) == 3


def test_an_evicted_counter_starts_from_a_number_never_used(settings):
    from django.core.cache import cache

    generation = CacheGeneration("test:evicted")
    before = generation.current()
    generation.bump()
    cache.delete(generation.counter_key)
    assert generation.current() > before + 1


def cached_answers() -> tuple[dict, dict]:
    return leaderboard_payload(LeaderboardQuery()), agreement_for_stage(
        stage="end2end", reviews=SUBMITTED
    )


def test_a_landing_judgment_invalidates_the_leaderboard_and_the_agreement(
    django_capture_on_commit_callbacks,
):
    judge = JudgeFactory(name="claude-judge")
    judge_submission(SubmissionFactory(agent=AgentFactory(name="alpha")), judge, {"Overall": 6})
    cached_answers()
    with CaptureQueriesContext(connection) as queries:
        board, _ = cached_answers()
    # The agreement's freshness check costs its one query and its default panel
    # (the "Mean of the judges" is the stage's panel) another; the leaderboard none.
    assert len(queries) <= 2
    assert [r["agent"] for r in board["rows"]] == ["alpha"]
    generations = (DATA_GENERATION.current(), AGREEMENT_GENERATION.current())

    with django_capture_on_commit_callbacks(execute=True):
        judgment = judge_submission(
            SubmissionFactory(agent=AgentFactory(name="beta")), judge, {"Overall": 9}
        )
    assert DATA_GENERATION.current() > generations[0]
    assert AGREEMENT_GENERATION.current() > generations[1]
    board, _ = cached_answers()
    assert [r["agent"] for r in board["rows"]] == ["beta", "alpha"]

    # A score changed outside a service (a shell) says so itself: no model signal.
    generations = (DATA_GENERATION.current(), AGREEMENT_GENERATION.current())
    with django_capture_on_commit_callbacks(execute=True):
        score = DimensionScore.objects.get(judgment=judgment, dimension="Overall")
        score.score = 2
        score.save()
    assert (DATA_GENERATION.current(), AGREEMENT_GENERATION.current()) == generations
    with django_capture_on_commit_callbacks(execute=True):
        results_changed(["end2end"], agreement=True)
    assert DATA_GENERATION.current() > generations[0]
    assert AGREEMENT_GENERATION.current() > generations[1]
    board, _ = cached_answers()
    assert [r["agent"] for r in board["rows"]] == ["alpha", "beta"]
