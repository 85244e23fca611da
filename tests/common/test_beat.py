"""Every periodic task provably runs (issue 40): Celery beat and a worker on the
suite's real broker, long enough for every entry of CELERY_BEAT_SCHEDULE to be
sent and executed at least once; any scheduling error fails. Beat used to log
`SchedulingError: ... soft_time_limit must be less than or equal to time_limit`
every minute for `agent-runs-resume-stalled`, and no test noticed.

The entries' intervals are shortened through their settings' variables; an
entry added without such a variable never runs here and fails this test."""

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.support.waiting import WaitTimeout, wait_until
from tests.support.workers import database_url, processes_stop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backends]

ROOT = Path(__file__).resolve().parents[2]
# Each schedule's interval, in seconds, through the variable its setting reads.
SHORT_INTERVALS = {"JUDGE_REAP_INTERVAL_SECONDS": "2", "AGENT_RUN_REAP_INTERVAL_SECONDS": "2"}
SCHEDULING_ERRORS = ("SchedulingError", "Couldn't apply scheduled task")


def _executed(log: str, task: str) -> bool:
    return re.search(rf"Task {re.escape(task)}\[[^\]]+\] succeeded", log) is not None


def test_beat_sends_and_a_worker_executes_every_periodic_task(celery_worker_process, tmp_path):
    worker_log = tmp_path / "worker.log"
    beat_log = tmp_path / "beat.log"
    env = {**os.environ, **SHORT_INTERVALS}
    queues = ",".join(
        sorted({entry["options"]["queue"] for entry in settings.CELERY_BEAT_SCHEDULE.values()})
    )
    celery_worker_process(queues, env=SHORT_INTERVALS, extra_args=["--logfile", str(worker_log)])
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "mlrbench_site", "beat", "--loglevel", "INFO",
         "-s", str(tmp_path / "beat-schedule"), "--logfile", str(beat_log)],
        cwd=ROOT,
        env={
            **env,
            "DATABASE_URL": database_url(connection.settings_dict),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "REDIS_URL": settings.REDIS_URL,
        },
        start_new_session=True,
    )  # fmt: skip
    tasks = {name: entry["task"] for name, entry in settings.CELERY_BEAT_SCHEDULE.items()}

    def every_task_executed_or_beat_ended() -> bool:
        log = worker_log.read_text() if worker_log.exists() else ""
        return all(_executed(log, task) for task in tasks.values()) or beat.poll() is not None

    try:
        # A timeout is not the failure: the assertions below name the tasks never run.
        with contextlib.suppress(WaitTimeout):
            wait_until(every_task_executed_or_beat_ended, timeout=90, interval=0.5)
    finally:
        processes_stop([beat], timeout=10)

    log = worker_log.read_text() if worker_log.exists() else ""
    beats = beat_log.read_text() if beat_log.exists() else ""
    never = sorted(name for name, task in tasks.items() if not _executed(log, task))
    assert never == [], f"periodic tasks never executed: {never}\n{beats[-3000:]}"
    problems = [line for line in beats.splitlines() if any(e in line for e in SCHEDULING_ERRORS)]
    assert problems == []
