"""What the judge queue survives (issue 20, faults 10-15): lost messages,
dead database connections, a claim that fails, Redis outages in the rate
limiter and the cache, and time limits that contradict each other."""

import logging
from datetime import timedelta

import psycopg
import pytest
import redis.exceptions
from celery.exceptions import Retry
from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, connection
from django.test import override_settings
from django.utils import timezone

from common.broker import broker_memory_lost, broker_memory_restored
from judging.models import Judgment, JudgmentStatus
from judging.services import queue, run
from judging.tasks import RETRY_SECONDS, judgment_run_task, reap_stuck_task
from tests.support.fake_llm import answer

from .helpers import review_answer


@pytest.fixture
def judgment(submission, rubrics, judge_for):
    return Judgment.objects.create(
        submission=submission, judge=judge_for("judge-a"), rubric=rubrics["end2end"]
    )


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The ids `_enqueue` was asked to send (no broker here)."""
    ids: list[int] = []
    monkeypatch.setattr(queue, "_enqueue", lambda judgment_ids: ids.extend(judgment_ids))
    return ids


@pytest.mark.django_db
def test_queued_judgments_whose_message_is_old_are_sent_again_once(
    judgment, sent, django_capture_on_commit_callbacks
):
    fresh = Judgment.objects.create(
        submission=judgment.submission, judge=judgment.judge, rubric=judgment.rubric,
        condition="no_code",
    )  # fmt: skip
    Judgment.objects.filter(pk=judgment.pk).update(updated_at=timezone.now() - timedelta(hours=1))

    with (
        override_settings(JUDGE_RESEND_QUEUED_SECONDS=600),
        django_capture_on_commit_callbacks(execute=True),
    ):
        first = queue.judgments_resend_queued()
        again = queue.judgments_resend_queued()

    assert first == [judgment.pk] and sent == [judgment.pk]
    assert again == []  # stamped: not before another interval
    assert fresh.pk not in sent


@pytest.mark.django_db(transaction=True)
def test_the_reaper_survives_a_connection_the_server_terminated(judgment, sent):
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    settings_dict = connection.settings_dict
    with psycopg.connect(
        host=settings_dict["HOST"], port=settings_dict["PORT"] or 5432,
        user=settings_dict["USER"], dbname=settings_dict["NAME"], autocommit=True,
        password=settings_dict["PASSWORD"] or None,
    ) as admin:  # fmt: skip
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])

    result = reap_stuck_task.apply()

    assert result.successful(), result.traceback


@pytest.mark.django_db(transaction=True)
def test_a_claim_that_fails_on_the_database_is_retried_not_acknowledged(judgment, monkeypatch):
    def dead(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(run, "_judgment_claim", dead)
    retried = []
    monkeypatch.setattr(
        judgment_run_task, "retry", lambda **kwargs: retried.append(kwargs) or Retry()
    )
    # As a worker runs it: WorkerTask's declared retry (`retry_on`) takes the error.
    judgment_run_task.push_request(is_eager=False, called_directly=False)
    try:
        with pytest.raises(Retry):
            judgment_run_task(judgment.pk)
    finally:
        judgment_run_task.pop_request()

    assert retried and isinstance(retried[0]["exc"], OperationalError)
    assert retried[0]["countdown"] == RETRY_SECONDS
    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.QUEUED  # left for the retry or the reaper


@pytest.mark.django_db
def test_a_rate_limiter_outage_is_waited_out(judgment, fake_llm, monkeypatch):
    fake_llm.script(answer(review_answer("end2end")))
    real = run.judge_call_turn
    outages = [redis.exceptions.ConnectionError("Connection refused")] * 2

    def flaky(**kwargs):
        if outages:
            raise outages.pop()
        return real(**kwargs)

    monkeypatch.setattr(run, "judge_call_turn", flaky)
    monkeypatch.setattr(run, "LIMITER_OUTAGE_WAIT_SECONDS", 0.01)

    run.judgment_run(judgment_id=judgment.pk)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.DONE, judgment.error


@pytest.mark.django_db(transaction=True)
def test_a_cache_that_cannot_be_invalidated_never_errors_the_judgment(
    judgment, fake_llm, monkeypatch, caplog
):
    fake_llm.script(answer(review_answer("end2end")))

    def down(*args, **kwargs):
        raise redis.exceptions.ConnectionError("Connection refused")

    monkeypatch.setattr(cache, "incr", down)
    monkeypatch.setattr(cache, "set", down)
    monkeypatch.setattr("common.cache_generation.BUMP_RETRY_SECONDS", 0)

    with caplog.at_level(logging.WARNING):
        run.judgment_run(judgment_id=judgment.pk)

    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.DONE
    assert judgment.scores.count() == 5
    assert "not invalidated" in caplog.text


def test_time_limits_that_contradict_each_other_fail_the_system_check():
    from judging.checks import judge_time_limits_check

    with override_settings(JUDGE_TASK_SOFT_TIME_LIMIT=600, JUDGE_TASK_TIME_LIMIT=620):
        errors = judge_time_limits_check()
    assert [error.id for error in errors] == ["judging.E002"]
    assert judge_time_limits_check() == []


@pytest.mark.django_db
def test_an_enqueue_that_fails_after_commit_is_logged_and_left_to_the_reaper(
    judgment, monkeypatch, caplog
):
    app = judgment_run_task.app

    def broker_down(*args, **kwargs):
        raise redis.exceptions.ConnectionError("Connection refused")

    monkeypatch.setattr(app, "producer_or_acquire", broker_down)
    broker = settings.CELERY_BROKER_URL
    if broker.startswith("redis"):
        broker_memory_restored(broker)  # nothing lost so far
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with caplog.at_level(logging.ERROR):
            queue._enqueue([judgment.pk])
    finally:
        app.conf.task_always_eager = eager

    assert "the reaper will" in caplog.text
    judgment.refresh_from_db()
    assert judgment.status == JudgmentStatus.QUEUED
    # The marker is dropped: the reaper's next tick sends every queued judgment
    # again, this one included, instead of waiting for the resend interval.
    if broker.startswith("redis"):
        assert broker_memory_lost(broker) is True
        cache.clear()  # its resend lock
