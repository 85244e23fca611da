"""The judge queue with real Celery worker processes on the suite's broker
(Redis, or RabbitMQ's quorum queues in CI's second run), calling the
loopback server through litellm: a ready submission is scored by every active
judge, a message delivered twice is judged once, a worker killed with SIGKILL
half-way leaves a judgment that still ends `done` exactly once, a judge's
requests-per-minute limit holds across worker processes, and a worker with more
threads than call slots keeps no more calls in flight than its slots, and a
judgment sent with a countdown (a retry's backoff) waits in the broker, not in
a worker, then is judged; a worker on the gpu queue alone does not warm up the
LLM client."""

import os
import re
import signal
import time
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command

from judging.models import Judgment, JudgmentStatus, SubmissionJudgingState
from judging.selectors import stage_scores, submission_judging_state
from judging.services.queue import judgments_queue
from judging.services.rubrics import ensure_default_rubrics
from judging.tasks import judgment_run_task
from submissions.signals import submission_ready
from tests.judging.factories import JudgeFactory
from tests.support.fake_llm import answer
from tests.support.waiting import wait_until

from .conftest import end2end_submission
from .helpers import review_answer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backends]


def statuses(submission) -> list[str]:
    return sorted(Judgment.objects.filter(submission=submission).values_list("status", flat=True))


@pytest.fixture
def two_judges(fake_llm):
    ensure_default_rubrics()
    a = JudgeFactory(name="judge-a", model="openai/judge-a", api_base=fake_llm.url)
    b = JudgeFactory(name="judge-b", model="openai/judge-b", api_base=fake_llm.url)
    JudgeFactory(name="retired", api_base=fake_llm.url, is_active=False)

    def by_model(body):
        # Two judges that disagree: the stage score must be their mean.
        if body["model"] == "judge-a":
            return answer(review_answer("end2end", score=5, overall=6))
        return answer(review_answer("end2end", score=8, overall=9))

    fake_llm.default = by_model
    return a, b


def test_a_ready_submission_is_scored_by_every_active_judge_and_the_stage_score_is_their_mean(
    celery_worker_process, worker_env, fake_llm, two_judges
):
    celery_worker_process("judge", pool="threads", concurrency=4, env=worker_env)
    submission = end2end_submission()

    # What the intake does once the submission's transaction has committed.
    submission_ready.send(sender=None, submission_id=submission.pk)

    wait_until(lambda: statuses(submission) == ["done", "done"], message="both judgments done")
    judges = set(
        Judgment.objects.filter(submission=submission).values_list("judge__name", flat=True)
    )
    assert judges == {"judge-a", "judge-b"}  # the retired judge was not queued
    means = stage_scores(submission_ids=[submission.pk])[submission.pk]
    assert means["Overall"] == Decimal("7.5")
    assert means["Clarity"] == Decimal("6.5")
    assert submission_judging_state(submission_id=submission.pk) == SubmissionJudgingState.JUDGED


def test_a_message_delivered_twice_is_judged_once(
    celery_worker_process, worker_env, fake_llm, two_judges
):
    judge_a, _ = two_judges
    celery_worker_process("judge", pool="threads", concurrency=4, env=worker_env)
    submission = end2end_submission()
    report = judgments_queue(submissions=[submission], judges=[judge_a])
    (judgment_id,) = report.judgment_ids

    judgment_run_task.delay(judgment_id)  # the same message again

    wait_until(lambda: statuses(submission) == ["done"], message="the judgment done")
    time.sleep(1.0)  # time enough for a second run to show up, were there one
    assert len(fake_llm.requests) == 1
    assert Judgment.objects.get(pk=judgment_id).scores.count() == 5


def delayed_messages(channel) -> int:
    """Messages RabbitMQ holds back for a countdown (Celery's native delayed
    delivery: one quorum queue per power of two seconds)."""
    from kombu.transport.native_delayed_delivery import MAX_LEVEL, level_name

    return sum(
        channel.queue_declare(queue=level_name(level), passive=True).message_count
        for level in range(MAX_LEVEL + 1)
    )


def test_a_judgment_sent_with_a_countdown_waits_in_the_broker_then_is_judged(
    celery_worker_process, worker_env, fake_llm, two_judges, settings
):
    from mlrbench_site.celery import app

    judge_a, _ = two_judges
    submission = end2end_submission()
    report = judgments_queue(submissions=[submission], judges=[judge_a])
    (judgment_id,) = report.judgment_ids
    with app.connection_for_write() as conn:
        app.amqp.queues["judge"](conn.default_channel).purge()  # only the delayed message
    celery_worker_process("judge", pool="threads", concurrency=2, env=worker_env)

    judgment_run_task.apply_async((judgment_id,), countdown=4)

    if settings.BROKER_IS_RABBITMQ:
        # On quorum queues a worker cannot hold an early message back: the broker does.
        with app.connection_for_write() as conn:
            channel = conn.default_channel
            assert channel.queue_declare(queue="judge", passive=True).message_count == 0
            wait_until(lambda: delayed_messages(channel) == 1, message="the message held back")
    wait_until(lambda: statuses(submission) == ["done"], message="the delayed judgment done")
    assert len(fake_llm.requests) == 1


def test_a_worker_killed_mid_judgment_leaves_a_judgment_that_still_ends_done_once(
    celery_worker_process, worker_env, fake_llm, two_judges
):
    judge_a, _ = two_judges
    first = celery_worker_process("judge", pool="threads", concurrency=2, env=worker_env)
    # The first call hangs (until the test ends); later calls answer at once.
    fake_llm.script(answer(review_answer("end2end", overall=3), delay=120))
    submission = end2end_submission()
    (judgment_id,) = judgments_queue(submissions=[submission], judges=[judge_a]).judgment_ids
    assert fake_llm.wait_for_requests(1)
    assert Judgment.objects.get(pk=judgment_id).status == JudgmentStatus.RUNNING

    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    # A second worker whose broker gives up on unacknowledged messages after 1 s:
    # the killed worker's message is delivered to it again, and must do nothing.
    time.sleep(1.5)  # about time: past that second, the message counts as unacknowledged
    celery_worker_process(
        "judge", pool="threads", concurrency=2, env={**worker_env, "CELERY_VISIBILITY_TIMEOUT": "1"}
    )
    time.sleep(2.0)  # about time: a redelivery that ran would have run by now
    assert Judgment.objects.get(pk=judgment_id).status == JudgmentStatus.RUNNING
    assert len(fake_llm.requests) == 1

    call_command("reap_stuck", "--older-than", "0")

    wait_until(lambda: statuses(submission) == ["done"], message="the requeued judgment done")
    time.sleep(2.0)  # any late redelivery would run now
    judgment = Judgment.objects.get(pk=judgment_id)
    assert Judgment.objects.filter(submission=submission).count() == 1
    assert judgment.status == JudgmentStatus.DONE
    assert judgment.scores.count() == 5
    assert judgment.scores.get(dimension="Overall").score == 6
    assert len(fake_llm.requests) == 2


def told_to_wait(logs: list[Path]) -> set[int]:
    """The judgments the workers' logs say were refused a turn by the judge's limit."""
    found = set()
    for log in logs:
        text = log.read_text() if log.exists() else ""
        found |= {int(pk) for pk in re.findall(r"judgment (\d+): the judge's limit of", text)}
    return found


def test_a_judges_rate_limit_holds_across_worker_processes(
    celery_worker_process, worker_env, fake_llm, tmp_path
):
    ensure_default_rubrics()
    judge = JudgeFactory(name="slow-provider", api_base=fake_llm.url, requests_per_minute=3)
    fake_llm.default = answer(review_answer("end2end"))
    logs = [tmp_path / f"worker-{n}.log" for n in range(2)]
    workers = [
        celery_worker_process(
            "judge",
            pool="threads",
            concurrency=4,
            env=worker_env,
            extra_args=["--logfile", str(log)],
        )
        for log in logs
    ]
    submissions = [end2end_submission(task_slug=f"iclr2025_task{i}") for i in range(6)]

    queued = judgments_queue(submissions=submissions, judges=[judge]).judgment_ids

    # Six judgments, eight threads in two processes (at most four messages each, so
    # both take some): the minute's three calls are answered and their judgments
    # done; each of the other three is refused a turn, in whichever process holds
    # it, until the window moves on a minute later. No fixed sleep: both are waited
    # for (the workers import litellm first, slow on a loaded machine).
    def done() -> set[int]:
        rows = Judgment.objects.filter(judge=judge, status=JudgmentStatus.DONE)
        return set(rows.values_list("pk", flat=True))

    wait_until(lambda: len(done()) == 3, timeout=180, message="three judgments done")
    wait_until(
        lambda: told_to_wait(logs) == set(queued) - done(),
        timeout=180,
        message="the other three judgments refused a turn",
    )
    assert len(fake_llm.requests) == 3
    assert len(done()) == 3
    # The other three wait a minute for their slots; a warm shutdown would wait too.
    for worker in workers:
        os.killpg(worker.pid, signal.SIGKILL)


def test_a_worker_with_more_threads_than_call_slots_keeps_only_its_slots_in_flight(
    celery_worker_process, worker_env, fake_llm
):
    ensure_default_rubrics()
    judge = JudgeFactory(name="small-server", api_base=fake_llm.url)
    fake_llm.default = answer(review_answer("end2end"), delay=0.4)
    celery_worker_process(
        "judge",
        pool="threads",
        concurrency=6,
        env={**worker_env, "JUDGE_CALLS_PER_PROCESS": "2"},
    )
    submissions = [end2end_submission(task_slug=f"iclr2025_task{i}") for i in range(8)]

    judgments_queue(submissions=submissions, judges=[judge])

    wait_until(
        lambda: Judgment.objects.filter(judge=judge, status=JudgmentStatus.DONE).count() == 8,
        message="all eight judgments to be done",
    )
    # Six threads took judgments at once; the server never had more than two calls.
    assert fake_llm.most_in_flight == 2
    assert len(fake_llm.requests) == 8


def test_calls_in_flight_hold_no_database_connection(celery_worker_process, worker_env, fake_llm):
    """Eight calls wait on the judge at once while the worker, with a pool of two
    connections, holds at most those two: a judge run gives its connection back
    before its call, so many calls in flight need few connections."""
    from django.db import connection

    ensure_default_rubrics()
    judge = JudgeFactory(name="slow-server", api_base=fake_llm.url)
    fake_llm.default = answer(review_answer("end2end"), delay=3.0)
    celery_worker_process(
        "judge",
        pool="threads",
        concurrency=8,
        env={**worker_env, "JUDGE_CALLS_PER_PROCESS": "8", "DATABASE_POOL_SIZE": "2"},
    )
    submissions = [end2end_submission(task_slug=f"iclr2025_pool{i}") for i in range(8)]

    judgments_queue(submissions=submissions, judges=[judge])

    wait_until(lambda: fake_llm.in_flight == 8, message="eight calls in flight")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        (held,) = cursor.fetchone()
    assert held <= 2
    wait_until(
        lambda: Judgment.objects.filter(judge=judge, status=JudgmentStatus.DONE).count() == 8,
        message="all eight judgments to be done",
    )


def test_a_gpu_worker_does_not_warm_up_the_llm_client(celery_worker_process, capfd):
    """The warm-up pays litellm's imports (~4 s of CPU) where many judge threads would
    otherwise queue on them; a worker on the gpu queue alone does without."""
    celery_worker_process("gpu")
    seen: list[str] = []

    def said() -> bool:
        seen.append(capfd.readouterr().err)
        return "LLM client not warmed up: this worker takes gpu" in "".join(seen)

    wait_until(said, timeout=30, interval=0.2, message="the worker's warm-up line")
    assert "LLM client warming up" not in "".join(seen)
