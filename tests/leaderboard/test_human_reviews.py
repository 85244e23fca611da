"""Human Overall on the leaderboard and released reviews in the export: only
reviews an organiser has released (or the published, imported ones) count."""

import csv
import io
import zipfile

import pytest
from django.urls import reverse
from django.utils import timezone

from benchmark.roles import organiser_grant
from reviews.models import ReviewRound
from reviews.services import (
    placeholder_reviewer,
    review_import_record,
    review_round_release,
    review_submit,
)
from tests.benchmark.factories import TaskFactory
from tests.judging.factories import RubricFactory
from tests.reviews.factories import AssignmentFactory, ReviewRoundFactory
from tests.reviews.factories import UserFactory as ReviewUserFactory
from tests.reviews.scenario import review_data
from tests.support.queries import count_queries

from .factories import AgentFactory, JudgeFactory, SubmissionFactory, bulk_board, judge_submission

pytestmark = pytest.mark.django_db

LEADERBOARD = "/api/leaderboard/"
DIMENSIONS = ("Clarity", "Novelty", "Soundness", "Significance")


def scores(overall: int) -> dict[str, int]:
    return {"Overall": overall, **{d: 5 for d in DIMENSIONS}}


def review(submission, review_round, username: str, overall: int):
    """A reviewer of `review_round` submits a review of `submission` through the form's service."""
    assignment = AssignmentFactory(
        review_round=review_round,
        reviewer=ReviewUserFactory(username=username),
        submission=submission,
    )
    return review_submit(assignment=assignment, data=review_data(scores(overall)))


def imported(submission, reviewer_id: str, overall: int):
    review_import_record(
        submission=submission,
        reviewer=placeholder_reviewer(reviewer_id=reviewer_id),
        scores=scores(overall),
        ranges={k: (1, 10) for k in scores(overall)},
    )


def human_of(client, agent: str):
    rows = client.get(LEADERBOARD).json()["rows"]
    return next(r["human_overall"] for r in rows if r["agent"] == agent)


@pytest.fixture
def papers():
    """alpha: an older and a newer (counted) end2end version; beta: one paper."""
    RubricFactory()
    judge = JudgeFactory(name="judge-a")
    alpha, beta = AgentFactory(name="alpha"), AgentFactory(name="beta")
    task = TaskFactory(slug="iclr2025_bi_align")
    old = SubmissionFactory(agent=alpha, task=task, version=1)
    new = SubmissionFactory(agent=alpha, task=task, version=2)
    other = SubmissionFactory(agent=beta, task=task)
    for submission, overall in ((old, 3), (new, 6), (other, 5)):
        judge_submission(submission, judge, {"Overall": overall, **{d: 5 for d in DIMENSIONS}})
    return old, new, other


def test_human_overall_is_the_mean_of_released_reviews_of_the_counted_submission(
    client, papers, django_capture_on_commit_callbacks
):
    old, new, other = papers
    # Closed rounds: while a round is open its papers' runs are off the boards
    # altogether (blind review, docs/reviews.md "Blind against the public site too").
    closed = timezone.now()
    released = ReviewRoundFactory(name="released", closed_at=closed)
    kept_back = ReviewRoundFactory(name="kept back", closed_at=closed)
    with django_capture_on_commit_callbacks(execute=True):
        review(new, released, "rev-1", 7)
        review(new, released, "rev-2", 8)
        review(old, released, "rev-3", 2)  # an older version: it does not count
        review(new, kept_back, "rev-4", 1)  # a round not released: never shown
        imported(other, "42", 4)  # the published MLR-Bench scores are public

    assert human_of(client, "alpha") is None
    assert human_of(client, "beta") == 4.0

    with django_capture_on_commit_callbacks(execute=True):
        review_round_release(review_round=released)

    # The cached answer was dropped when the round was released.
    assert human_of(client, "alpha") == 7.5
    assert human_of(client, "beta") == 4.0
    page = client.get(reverse("leaderboard:leaderboard")).content.decode()
    assert "Human Overall" in page
    assert 'data-column="human">7.50<' in page
    rows = list(csv.DictReader(io.StringIO(client.get(LEADERBOARD, {"format": "csv"}).text)))
    assert {r["agent"]: r["human_overall"] for r in rows} == {"alpha": "7.5", "beta": "4.0"}


def test_reviews_of_rounds_not_released_do_not_show(client, papers):
    _old, new, _other = papers
    review(new, ReviewRoundFactory(), "rev-1", 9)

    board = client.get(LEADERBOARD).json()
    assert all(row["human_overall"] is None for row in board["rows"])
    assert "Human Overall" not in client.get(reverse("leaderboard:leaderboard")).content.decode()
    archive = zipfile.ZipFile(io.BytesIO(b"".join(client.get("/api/export/").streaming_content)))
    assert list(csv.DictReader(io.StringIO(archive.read("reviews.csv").decode()))) == []


def test_the_export_holds_released_reviews_only_with_reviewers_anonymised(client, papers):
    old, new, other = papers
    released, kept_back = ReviewRoundFactory(), ReviewRoundFactory()
    review(new, released, "alice-reviewer", 7)
    review(old, released, "bob-reviewer", 2)
    review(other, kept_back, "carol-reviewer", 9)
    imported(other, "42", 4)
    review_round_release(review_round=released)

    body = b"".join(client.get("/api/export/").streaming_content)
    archive = zipfile.ZipFile(io.BytesIO(body))
    rows = list(csv.DictReader(io.StringIO(archive.read("reviews.csv").decode())))
    got = sorted((r["agent"], r["version"], r["imported"], r["Overall"]) for r in rows)
    assert got == [
        ("alpha", "1", "false", "2"),
        ("alpha", "2", "false", "7"),
        ("beta", "1", "true", "4"),
    ]
    assert {r["reviewer"] for r in rows} == {"1", "2", "3"}
    assert set(rows[0]) >= {"submission_id", "task", "stage", "Clarity", "Overall"}
    jsonl = archive.read("reviews.jsonl").decode().splitlines()
    assert len(jsonl) == 3
    for secret in (b"alice-reviewer", b"bob-reviewer", b"carol-reviewer", b"mlrbench-reviewer-42"):
        assert secret not in archive.read("reviews.csv")
        assert secret not in archive.read("reviews.jsonl")


def test_an_organiser_releases_a_round_from_its_page(client, papers):
    _old, new, _other = papers
    review_round = ReviewRoundFactory()
    review(new, review_round, "rev-1", 7)
    organiser = ReviewUserFactory(username="organiser")
    organiser_grant(user=organiser)
    client.force_login(organiser)
    url = reverse("reviews:round", args=[review_round.pk])
    assert "not released" in client.get(url).content.decode()

    response = client.post(
        reverse("reviews:round-release", args=[review_round.pk]), {"confirm": "yes"}, follow=True
    )

    assert "Round released" in response.content.decode()
    review_round.refresh_from_db()
    assert review_round.is_released and review_round.is_closed
    assert human_of(client, "alpha") == 7.0
    # Released reviews cannot change any more: the round's assignments are closed.
    assert review_round.assignments.filter(closed_at__isnull=True).count() == 0


def test_releasing_twice_keeps_the_first_release_time(papers):
    review_round = ReviewRoundFactory()
    first = review_round_release(review_round=review_round).released_at
    again = review_round_release(review_round=ReviewRound.objects.get(pk=review_round.pk))
    assert again.released_at == first


def test_the_human_column_keeps_the_query_count_constant(client):
    judges = [JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")]
    tasks = [TaskFactory(slug=f"iclr2025_t{i}") for i in range(3)]
    page = reverse("leaderboard:leaderboard")

    def add_reviews(agents, prefix):
        for n, agent in enumerate(agents):
            for submission in agent.submissions.all():
                imported(submission, f"{prefix}-{n}", 1 + n % 10)

    small_agents = bulk_board(n_agents=3, tasks=tasks, judges=judges, prefix="small")
    add_reviews(small_agents, "s")
    small = (count_queries(client, page), count_queries(client, LEADERBOARD))
    assert all(r["human_overall"] is not None for r in client.get(LEADERBOARD).json()["rows"])

    large_agents = bulk_board(n_agents=60, tasks=tasks, judges=judges, prefix="large")
    add_reviews(large_agents[:30], "l")
    large = (count_queries(client, page), count_queries(client, LEADERBOARD))

    rows = client.get(LEADERBOARD).json()["rows"]
    assert len(rows) == 63
    assert sum(r["human_overall"] is not None for r in rows) == 33
    assert small == large
