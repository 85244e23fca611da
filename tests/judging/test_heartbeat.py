"""A running judgment's lease (issue 40): its worker process writes its
heartbeat while the run lives and stops when the process dies; the reaper
queues again what nobody vouches for, after JUDGE_LEASE_STALE_SECONDS, not
after the judge task's hard limit (12 minutes, which left the fault drill's
killed runs `running` at its end). Queued work whose messages the broker lost
is sent again at once when the broker comes back empty."""

import time
import uuid
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from common.broker import (
    BROKER_MEMORY_KEY,
    BROKER_RESEND_LOCK_KEY,
    broker_memory_lost,
    broker_memory_restored,
)
from judging import heartbeat
from judging.models import Judgment, JudgmentStatus
from judging.services import queue, run

from .conftest import end2end_submission


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The ids `_enqueue` was asked to send (no worker here)."""
    ids: list[int] = []
    monkeypatch.setattr(queue, "_send", lambda judgment_ids: ids.extend(judgment_ids))
    return ids


def _running(rubrics, judge, *, slug: str, heartbeat_age: float, token=None) -> Judgment:
    long_ago = timezone.now() - timedelta(hours=1)
    return Judgment.objects.create(
        submission=end2end_submission(task_slug=slug),
        judge=judge,
        rubric=rubrics["end2end"],
        status=JudgmentStatus.RUNNING,
        run_token=token or uuid.uuid4(),
        started_at=long_ago,
        heartbeat_at=timezone.now() - timedelta(seconds=heartbeat_age),
    )


@pytest.mark.django_db
def test_the_reaper_takes_back_what_went_silent_and_leaves_what_is_alive(
    rubrics, judge_for, sent, django_capture_on_commit_callbacks
):
    judge = judge_for("judge-a")
    silent = _running(rubrics, judge, slug="iclr2025_silent", heartbeat_age=200)
    alive = _running(rubrics, judge, slug="iclr2025_alive", heartbeat_age=5)

    with (
        override_settings(JUDGE_LEASE_STALE_SECONDS=180, JUDGE_TASK_TIME_LIMIT=720),
        django_capture_on_commit_callbacks(execute=True),
    ):
        requeued = queue.judgments_reap_stuck()

    # Both started an hour ago, past the hard limit: only the heartbeat tells them apart.
    assert requeued == [silent.pk] and sent == [silent.pk]
    silent.refresh_from_db()
    alive.refresh_from_db()
    assert silent.status == JudgmentStatus.QUEUED and silent.run_token is None
    assert silent.heartbeat_at is None and silent.started_at is None
    assert alive.status == JudgmentStatus.RUNNING


@pytest.mark.django_db
def test_a_process_vouches_for_its_runs_until_their_deadline_only(rubrics, judge_for):
    judge = judge_for("judge-a")
    held, late, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    mine = _running(rubrics, judge, slug="iclr2025_mine", heartbeat_age=100, token=held)
    stuck = _running(rubrics, judge, slug="iclr2025_stuck", heartbeat_age=100, token=late)
    elsewhere = _running(rubrics, judge, slug="iclr2025_else", heartbeat_age=100, token=other)
    far_past = time.monotonic() - 10 * settings.JUDGE_LEASE_STALE_SECONDS
    heartbeat.heartbeat_hold(judgment_id=mine.pk, token=held, deadline=time.monotonic() + 60)
    # A run stuck past its own deadline (a call that never returns) is not vouched for.
    heartbeat.heartbeat_hold(judgment_id=stuck.pk, token=late, deadline=far_past)
    try:
        written = heartbeat.heartbeat_write()
    finally:
        heartbeat.heartbeat_drop(token=held)
        heartbeat.heartbeat_drop(token=late)

    assert written == 1
    for judgment in (mine, stuck, elsewhere):
        judgment.refresh_from_db()
    assert mine.heartbeat_at and stuck.heartbeat_at and elsewhere.heartbeat_at
    assert timezone.now() - mine.heartbeat_at < timedelta(seconds=5)
    assert timezone.now() - stuck.heartbeat_at > timedelta(seconds=90)
    assert timezone.now() - elsewhere.heartbeat_at > timedelta(seconds=90)
    assert heartbeat.heartbeat_write() == 0  # dropped: nothing held any more


@pytest.mark.django_db
def test_a_run_is_claimed_with_its_heartbeat_and_ends_holding_nothing(
    submission, rubrics, judge_for, fake_llm
):
    from tests.support.fake_llm import answer

    from .helpers import review_answer

    fake_llm.default = lambda body: answer(review_answer("end2end"))
    judgment = Judgment.objects.create(
        submission=submission, judge=judge_for("judge-a"), rubric=rubrics["end2end"]
    )

    run.judgment_run(judgment_id=judgment.pk)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.DONE
    assert judgment.started_at is not None and judgment.heartbeat_at is not None
    assert heartbeat._runs == {}


@pytest.fixture
def broker() -> redis.Redis:
    """A client of the Redis broker; the test is skipped on RabbitMQ, whose quorum
    queues keep their messages across a restart (nothing to notice or resend)."""
    if not settings.CELERY_BROKER_URL.startswith("redis"):
        pytest.skip("RabbitMQ's quorum queues keep their messages across a restart")
    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def test_a_broker_that_came_back_empty_is_noticed_by_one_process_until_it_is_restored(broker):
    url = settings.CELERY_BROKER_URL
    broker.delete(BROKER_MEMORY_KEY, BROKER_RESEND_LOCK_KEY)

    first, meanwhile = broker_memory_lost(url), broker_memory_lost(url)
    broker.delete(BROKER_RESEND_LOCK_KEY)  # the first died half-way; its lock expired
    after_a_death = broker_memory_lost(url)
    broker_memory_restored(url)
    restored = broker_memory_lost(url)
    broker.flushdb()  # what a Redis that keeps nothing is after a restart
    after_restart = broker_memory_lost(url)

    assert (first, meanwhile, after_a_death, restored, after_restart) == (
        True, False, True, False, True,
    )  # fmt: skip
    assert 0 < broker.ttl(BROKER_RESEND_LOCK_KEY) <= 60
    assert broker_memory_lost("amqp://guest:guest@127.0.0.1:5672//") is False


@pytest.mark.django_db
def test_after_the_broker_lost_its_messages_every_queued_judgment_is_sent_at_once(
    broker, judgment_pair, sent
):
    broker.set(BROKER_MEMORY_KEY, "x")

    with override_settings(JUDGE_RESEND_QUEUED_SECONDS=900, JUDGE_RESEND_BATCH=1):
        nothing_lost = queue.judgments_resend_lost()
        broker.delete(BROKER_MEMORY_KEY, BROKER_RESEND_LOCK_KEY)  # the broker restarted
        lost = queue.judgments_resend_lost()

    # Queued a moment ago: before, they waited for the 15-minute resend interval;
    # all of them, batch after batch, then the broker is marked whole again.
    assert nothing_lost == []
    assert sorted(lost) == sorted(j.pk for j in judgment_pair) == sorted(sent)
    assert broker.exists(BROKER_MEMORY_KEY)


@pytest.mark.django_db
def test_a_resend_the_broker_refuses_leaves_it_unmarked_for_the_next_look(
    broker, judgment_pair, monkeypatch
):
    broker.delete(BROKER_MEMORY_KEY, BROKER_RESEND_LOCK_KEY)

    def broker_away(judgment_ids):
        raise redis.exceptions.ConnectionError("Connection refused")

    monkeypatch.setattr(queue, "_send", broker_away)
    with pytest.raises(redis.exceptions.ConnectionError):
        queue.judgments_resend_lost()

    assert not broker.exists(BROKER_MEMORY_KEY)
    broker.delete(BROKER_RESEND_LOCK_KEY)  # its lock expired
    assert broker_memory_lost(settings.CELERY_BROKER_URL) is True


@pytest.fixture
def judgment_pair(submission, rubrics, judge_for) -> list[Judgment]:
    return [
        Judgment.objects.create(
            submission=submission, judge=judge_for(name), rubric=rubrics["end2end"]
        )
        for name in ("judge-a", "judge-b")
    ]


@pytest.mark.django_db
def test_a_judgment_given_back_is_sent_again_after_the_lease_not_the_resend_interval(
    judgment_pair, sent, django_capture_on_commit_callbacks
):
    # Given back after a database error, its retry was a message (a countdown) held
    # by a worker that was then killed: the reverse-order drill ended with it queued.
    given_back, never_claimed = judgment_pair
    long_ago = timezone.now() - timedelta(seconds=200)
    Judgment.objects.filter(pk=given_back.pk).update(attempts=1, updated_at=long_ago)
    Judgment.objects.filter(pk=never_claimed.pk).update(attempts=0, updated_at=long_ago)

    with (
        override_settings(JUDGE_RESEND_QUEUED_SECONDS=900, JUDGE_LEASE_STALE_SECONDS=180),
        django_capture_on_commit_callbacks(execute=True),
    ):
        resent = queue.judgments_resend_queued()

    # A prefetched delivery dies with its worker too: both, after the lease's seconds.
    assert sorted(resent) == sorted([given_back.pk, never_claimed.pk]) == sorted(sent)
