"""Right after a write, the boards that take seconds are answered as they were
while a worker recomputes them (leaderboard.caching.cached_stage): the first
request after a judgment lands costs no more than any other, says it is
stale, and nothing built on the stale board is kept."""

import time

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from common.cache_generation import CacheGeneration, fresh_reads, staleness
from leaderboard.caching import DATA_GENERATION, REFRESH_QUEUED_KEY, stage_generation
from leaderboard.releases import release_create, release_data
from leaderboard.selectors.board import LeaderboardQuery
from leaderboard.tasks import boards_refresh
from tests.benchmark.factories import AgentFactory
from tests.judging.factories import JudgeFactory
from tests.leaderboard.factories import judge_submission
from tests.submissions.factories import SubmissionFactory
from tests.support.waiting import wait_until

API = "/api/leaderboard/?stage=end2end"


def _counter():
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    return compute


def test_the_latest_value_is_served_for_a_while_after_a_bump_and_the_refresh_asked():
    generation = CacheGeneration("test:recent")
    compute, refreshes = _counter(), []

    def read() -> int:
        return generation.cached(
            ("a",), compute, timeout=60, stale_for=0.5, refresh=lambda: refreshes.append(1)
        )

    with staleness() as scope:
        assert read() == 1
    assert not scope.stale and refreshes == []
    generation.bump()
    with staleness() as scope:
        assert read() == 1  # the value as it was, not recomputed
    assert scope.stale and refreshes == [1]
    with fresh_reads(), staleness() as scope:
        assert read() == 2  # a release's read computes
    assert not scope.stale
    generation.bump()
    time.sleep(0.6)  # past stale_for: the reader computes for itself
    with staleness() as scope:
        assert read() == 3
    assert not scope.stale and refreshes == [1]


def test_what_is_built_on_a_stale_value_is_never_stored():
    generation = CacheGeneration("test:derived")
    inner = _counter()

    def board() -> int:
        return generation.cached(("board",), inner, timeout=60, stale_for=60)

    def page() -> str:
        return generation.cached(("page",), lambda: f"page of {board()}", timeout=60)

    assert page() == "page of 1"
    generation.bump()
    with staleness() as scope:
        assert page() == "page of 1"
    assert scope.stale
    # The worker's refresh stores the board of the new data ...
    with fresh_reads():
        assert board() == 2
    # ... and the page, not kept while stale, is built from it at once.
    with staleness() as scope:
        assert page() == "page of 2"
    assert not scope.stale


def test_an_expired_entry_without_a_write_is_recomputed_not_served_stale():
    from django.core.cache import cache

    generation = CacheGeneration("test:expired")
    compute = _counter()
    assert generation.cached(("a",), compute, timeout=60, stale_for=60) == 1
    cache.delete(generation.key("a"))  # its time limit ran out; the data did not move
    with staleness() as scope:
        assert generation.cached(("a",), compute, timeout=60, stale_for=60) == 2
    assert not scope.stale


@pytest.mark.django_db
def test_pages_and_answers_say_they_are_stale_until_the_refresh_ran(
    client, settings, django_capture_on_commit_callbacks
):
    settings.LEADERBOARD_STALE_SECONDS = 60
    judge = JudgeFactory(name="claude-judge")
    judge_submission(SubmissionFactory(agent=AgentFactory(name="alpha")), judge, {"Overall": 6})
    first = client.get(API)
    assert first.status_code == 200 and "X-Data-Stale" not in first
    # Each answer is cached once, on its own: the page too has been seen before.
    client.get(reverse("leaderboard:leaderboard") + "?stage=end2end")
    client.get("/judges/?stage=end2end")

    with django_capture_on_commit_callbacks(execute=True):
        judge_submission(SubmissionFactory(agent=AgentFactory(name="beta")), judge, {"Overall": 9})

    stale = client.get(API)
    assert stale.status_code == 200
    assert stale["X-Data-Stale"] == "true" and stale["Cache-Control"] == "no-store"
    assert [r["agent"] for r in stale.json()["rows"]] == ["alpha"]
    page = client.get(reverse("leaderboard:leaderboard") + "?stage=end2end")
    assert page["X-Data-Stale"] == "true"
    assert 'data-testid="stale-note"' in page.content.decode()
    judges = client.get("/judges/?stage=end2end")
    assert judges["X-Data-Stale"] == "true"
    assert 'data-testid="stale-note"' in judges.content.decode()

    # A release freezes the data as it is now, never the stale board.
    release = release_create(name="right-after")
    frozen = release_data(release)["leaderboards"]["end2end"]["rows"]
    assert [r["agent"] for r in frozen] == ["beta", "alpha"]

    boards_refresh()  # what the judge worker runs
    fresh = client.get(API)
    assert "X-Data-Stale" not in fresh
    assert [r["agent"] for r in fresh.json()["rows"]] == ["beta", "alpha"]
    page = client.get(reverse("leaderboard:leaderboard") + "?stage=end2end")
    assert 'data-testid="stale-note"' not in page.content.decode()
    assert "X-Data-Stale" not in client.get("/judges/?stage=end2end")


@pytest.mark.django_db
def test_a_judgment_landing_while_the_worker_warms_is_on_the_board_after_the_next_refresh(
    client, settings, monkeypatch, django_capture_on_commit_callbacks
):
    # The worker reads the data, a judgment lands (its generation bumped, the next
    # refresh queued), then the worker stores what it built: under the generation
    # it started with, never the new one, or the next refresh would keep it.
    from leaderboard import refresh

    settings.LEADERBOARD_STALE_SECONDS = 60
    judge = JudgeFactory(name="claude-judge")
    judge_submission(SubmissionFactory(agent=AgentFactory(name="alpha")), judge, {"Overall": 6})
    real_compute = refresh.leaderboard_compute

    def compute_then_a_judgment_lands(query):
        board = real_compute(query)
        with django_capture_on_commit_callbacks(execute=True):
            judge_submission(
                SubmissionFactory(agent=AgentFactory(name="beta")), judge, {"Overall": 9}
            )
        return board

    monkeypatch.setattr(refresh, "leaderboard_compute", compute_then_a_judgment_lands)
    boards_refresh(stages=["end2end"])
    monkeypatch.undo()
    boards_refresh(stages=["end2end"])  # the one the landing queued

    fresh = client.get(API)
    assert "X-Data-Stale" not in fresh
    assert [r["agent"] for r in fresh.json()["rows"]] == ["beta", "alpha"]


@pytest.mark.django_db
def test_without_a_broker_readers_compute_at_once(
    client, settings, django_capture_on_commit_callbacks
):
    settings.LEADERBOARD_STALE_SECONDS = 60
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the embedded defaults: no worker
    judge = JudgeFactory(name="claude-judge")
    judge_submission(SubmissionFactory(agent=AgentFactory(name="alpha")), judge, {"Overall": 6})
    client.get(API)
    with django_capture_on_commit_callbacks(execute=True):
        judge_submission(SubmissionFactory(agent=AgentFactory(name="beta")), judge, {"Overall": 9})
    answer = client.get(API)
    assert "X-Data-Stale" not in answer
    assert [r["agent"] for r in answer.json()["rows"]] == ["beta", "alpha"]


@pytest.mark.backends
def test_a_judgment_landing_is_brought_to_the_board_by_a_real_worker(
    live_server, settings, celery_worker_process
):
    """A judge worker process recomputes the boards after the write commits; the
    reader never computes (its fresh answer costs a handful of queries)."""
    import requests

    settings.LEADERBOARD_STALE_SECONDS = 60
    celery_worker_process("judge")
    judge = JudgeFactory(name="claude-judge")
    judge_submission(SubmissionFactory(agent=AgentFactory(name="alpha")), judge, {"Overall": 6})
    url = live_server.url + API
    assert [r["agent"] for r in requests.get(url, timeout=60).json()["rows"]] == ["alpha"]

    with transaction.atomic():  # as a judge run stores a judgment with its scores
        judge_submission(SubmissionFactory(agent=AgentFactory(name="beta")), judge, {"Overall": 9})
    right_after = requests.get(url, timeout=60)
    assert right_after.status_code == 200
    # Stale (the worker is still at it) or already fresh; never an error.
    assert [r["agent"] for r in right_after.json()["rows"]] in (["alpha"], ["beta", "alpha"])

    def fresh():
        answer = requests.get(url, timeout=60)
        return "X-Data-Stale" not in answer.headers and answer.json()

    rows = wait_until(fresh, timeout=60, message="the worker's refresh")["rows"]
    assert [r["agent"] for r in rows] == ["beta", "alpha"]

    def computed_here():
        pytest.fail("a reader had to compute what the worker should have")

    # Both boards of the new data are in the cache, put there by the worker.
    end2end = stage_generation("end2end")
    board = end2end.cached(
        ("leaderboard", LeaderboardQuery(stage="end2end"), ""), computed_here, timeout=60
    )
    assert [r["agent"] for r in board["rows"]] == ["beta", "alpha"]

    class NotYet(Exception):
        pass

    def not_yet():
        raise NotYet

    def judges_cached():
        # The worker warms the judges' board too; a generation bumped while it
        # warmed (a second announcement of the same landing) means a second warm:
        # wait for it, never compute here.
        try:
            return stage_generation("end2end").cached(
                ("judges", "end2end", ""), not_yet, timeout=60
            )
        except NotYet:
            return None

    judges = wait_until(judges_cached, timeout=60, message="the worker's judges' board")
    assert "claude-judge" in {r["name"] for r in judges["rows"]}


def _generations() -> dict[str, int]:
    stages = ("idea", "proposal", "experiment", "paper", "end2end")
    return {
        "all": DATA_GENERATION.current(),
        **{stage: stage_generation(stage).current() for stage in stages},
    }


def _refresh_queued() -> set[str]:
    from django.core.cache import cache

    stages = ("idea", "proposal", "experiment", "paper", "end2end")
    return {stage for stage in stages if cache.get(f"{REFRESH_QUEUED_KEY}:{stage}")}


@pytest.mark.django_db
def test_a_reviewers_draft_autosave_touches_no_board_and_queues_no_refresh(
    client, settings, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from reviews.services import (
        assignment_add,
        review_draft_save,
        review_round_create,
        reviewer_register,
    )
    from tests.benchmark.factories import UserFactory

    settings.LEADERBOARD_STALE_SECONDS = 60
    judge = JudgeFactory(name="claude-judge")
    submission = SubmissionFactory(agent=AgentFactory(name="alpha"))
    judge_submission(submission, judge, {"Overall": 6})
    assert client.get(API).status_code == 200
    reviewer = UserFactory(username="rev")
    reviewer_register(user=reviewer)
    review_round = review_round_create(
        name="r", stage="end2end", due_at=timezone.now() + timedelta(days=3),
        submissions=[submission],
    )  # fmt: skip
    assignment = assignment_add(review_round=review_round, reviewer=reviewer, submission=submission)
    generations = _generations()

    with django_capture_on_commit_callbacks(execute=True):
        review_draft_save(assignment=assignment, data={"score_Overall": "3"})
    with django_capture_on_commit_callbacks(execute=True):
        review_draft_save(assignment=assignment, data={"score_Overall": "4"})

    assert _generations() == generations
    assert _refresh_queued() == set()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(API).status_code == 200
    assert not any("leaderboard" in q["sql"] or "judgment" in q["sql"] for q in queries)


@pytest.mark.backends  # the write queues its refresh on the broker
@pytest.mark.django_db
def test_a_write_to_one_stage_refreshes_that_stage_only(
    client, settings, django_capture_on_commit_callbacks
):
    settings.LEADERBOARD_STALE_SECONDS = 60
    judge = JudgeFactory(name="claude-judge")
    judge_submission(SubmissionFactory(agent=AgentFactory(name="alpha")), judge, {"Overall": 6})
    idea = SubmissionFactory(agent=AgentFactory(name="beta"), stage="idea")
    judge_submission(idea, judge, {"Overall": 5})
    gamma = AgentFactory(name="gamma")  # a new agent is every stage's news
    boards_refresh()  # every stage's boards, as after an import
    generations = _generations()

    with django_capture_on_commit_callbacks(execute=True):
        submission = SubmissionFactory(agent=gamma, task=idea.task, stage="idea")
        judge_submission(submission, judge, {"Overall": 8})

    now = _generations()
    assert now["idea"] > generations["idea"] and now["all"] > generations["all"]
    assert {stage: now[stage] for stage in now if stage not in ("idea", "all")} == {
        stage: generations[stage] for stage in generations if stage not in ("idea", "all")
    }
    assert _refresh_queued() == {"idea"}
    # The other stages' answers are still the cached ones: no query computes them.
    with CaptureQueriesContext(connection) as queries:
        end2end = client.get(API)
    assert "X-Data-Stale" not in end2end and len(queries) == 0
    stale = client.get("/api/leaderboard/?stage=idea")
    assert stale["X-Data-Stale"] == "true"

    boards_refresh(stages=["idea"])  # what the queued task does

    assert _refresh_queued() == set()
    fresh = client.get("/api/leaderboard/?stage=idea")
    assert "X-Data-Stale" not in fresh
    assert [r["agent"] for r in fresh.json()["rows"]] == ["gamma", "beta"]
