"""Every Celery task of the site runs on one base (common.tasks.WorkerTask): in a
worker, a broken or obsolete database connection is dropped before and after
each task; an eager task keeps its caller's. The names stay what queued
messages and routes call them."""

from unittest import mock

import pytest
from celery.exceptions import Retry

from mlrbench_site.celery import app

TASKS = {
    "judging.judgment_run",
    "judging.reap_stuck",
    "agent_runs.llm_stage",
    "agent_runs.experiment_stage",
    "agent_runs.resume_stalled",
    # Written in the benchmark app before experiments existed; queued messages name it.
    "benchmark.experiment_run",
    "leaderboard.boards_refresh",
}


def test_every_task_keeps_its_name_and_runs_on_the_one_base():
    from common.tasks import WorkerTask

    app.loader.import_default_modules()
    site = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}

    assert set(site) == TASKS
    assert all(isinstance(task, WorkerTask) for task in site.values())


@pytest.mark.parametrize(
    ("name", "eager", "closes"),
    [
        ("leaderboard.boards_refresh", False, 2),  # before and after, in a worker
        ("leaderboard.boards_refresh", True, 0),  # eager: the caller's connection
        ("judging.reap_stuck", True, 2),  # a reaper is nobody's caller's work
    ],
)
def test_connections_are_checked_around_a_task_in_a_worker(name, eager, closes):
    app.loader.import_default_modules()
    task = app.tasks[name]
    with (
        mock.patch("common.tasks.close_old_connections") as close,
        mock.patch.object(task, "run", return_value=None),
    ):
        task.push_request(id="a-task", called_directly=False, is_eager=eager)
        try:
            task()
        finally:
            task.pop_request()

    assert close.call_count == closes


def test_a_task_called_as_a_function_keeps_its_callers_connection():
    app.loader.import_default_modules()
    task = app.tasks["leaderboard.boards_refresh"]
    with (
        mock.patch("common.tasks.close_old_connections") as close,
        mock.patch.object(task, "run", return_value=None),
    ):
        task()

    assert close.call_count == 0


def test_every_task_is_acknowledged_late_and_redelivered_when_its_worker_is_lost():
    """A worker that dies mid-task leaves its message to the broker (the base's
    `acks_late` and `reject_on_worker_lost`, not a setting or a decorator's)."""
    app.loader.import_default_modules()
    site = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}

    assert site
    assert {name for name, task in site.items() if task.acks_late is not True} == set()
    assert {name for name, task in site.items() if task.reject_on_worker_lost is not True} == set()


def test_the_site_s_tasks_have_limits_celery_accepts():
    from django.core.management import call_command

    from common.tasks import task_time_limits_errors

    assert task_time_limits_errors(app) == []
    call_command("check")  # raises SystemCheckError on any error


def test_a_task_whose_hard_limit_is_below_the_global_soft_limit_fails_the_check():
    # The mistake that kept beat from ever sending agent-runs-resume-stalled: a
    # task's own time_limit under CELERY_TASK_SOFT_TIME_LIMIT, which it inherits.
    from celery import Celery

    from common.tasks import WorkerTask, task_time_limits_errors

    other = Celery("limits-check", set_as_current=False)
    other.conf.task_soft_time_limit = 900

    @other.task(base=WorkerTask, name="tests.resume_stalled_like", time_limit=120)
    def resume_stalled_like() -> None:
        return None

    @other.task(base=WorkerTask, name="tests.fine", soft_time_limit=60, time_limit=120)
    def fine() -> None:
        return None

    errors = task_time_limits_errors(other)

    assert len(errors) == 1
    assert "tests.resume_stalled_like" in errors[0] and "900 s" in errors[0]
    with pytest.raises(ValueError, match="soft_time_limit must be less than or equal"):
        resume_stalled_like.apply_async()  # what beat logged every minute


# --- Declarative retries (WorkerTask.retry_on) --------------------------------


def _as_worker(task, *args, retries=0, eager=False):
    """Run `task` as a worker (or an eager apply) would, its `retry` recorded."""
    sent = []

    def retry(**kwargs):
        sent.append(kwargs)
        return Retry()

    with (
        mock.patch("common.tasks.close_old_connections"),
        mock.patch.object(task, "retry", side_effect=retry),
    ):
        task.push_request(id="a-task", called_directly=False, is_eager=eager, retries=retries)
        try:
            return task(*args), sent
        except Retry:
            return "retried", sent
        finally:
            task.pop_request()


def test_busy_slots_are_retried_as_declared_in_both_tasks_that_take_slots():
    from experiments.slots import HostTooSmall, SlotsBusy

    app.loader.import_default_modules()
    for name in ("agent_runs.llm_stage", "agent_runs.experiment_stage"):
        task = app.tasks[name]
        assert (task.retry_on, task.retry_countdown, task.max_retries) == ((SlotsBusy,), 30, 240)
    experiment = app.tasks["benchmark.experiment_run"]
    assert (experiment.retry_on, experiment.retry_countdown) == ((SlotsBusy, HostTooSmall), 30)

    with mock.patch("experiments.runner.experiment_execute", side_effect=SlotsBusy("all held")):
        outcome, sent = _as_worker(experiment, 7)

    assert outcome == "retried"
    assert len(sent) == 1 and isinstance(sent[0]["exc"], SlotsBusy)
    assert sent[0]["countdown"] == 30


def test_once_the_retries_are_spent_the_task_has_the_last_word():
    from experiments.slots import SlotsBusy

    app.loader.import_default_modules()
    experiment = app.tasks["benchmark.experiment_run"]
    with (
        mock.patch("experiments.runner.experiment_execute", side_effect=SlotsBusy("all held")),
        mock.patch("experiments.runner.experiment_give_up") as give_up,
    ):
        outcome, sent = _as_worker(experiment, 7, retries=experiment.max_retries)

    assert (outcome, sent) == (None, [])
    give_up.assert_called_once_with(run_id=7, reason="no slot became free: all held")
    # The default: the exception itself, the task failed.
    stage = app.tasks["agent_runs.llm_stage"]
    with (
        mock.patch("agent_runs.services.agent_run_stage_execute", side_effect=SlotsBusy("held")),
        pytest.raises(SlotsBusy),
    ):
        _as_worker(stage, 1, "experiment", retries=stage.max_retries)


def test_a_task_may_leave_its_retries_to_the_worker():
    from django.db import OperationalError

    app.loader.import_default_modules()
    task = app.tasks["judging.judgment_run"]
    error = OperationalError("server closed the connection unexpectedly")
    with (
        mock.patch("judging.tasks.judgment_run", side_effect=error),
        mock.patch("common.llm.warm_up"),
    ):
        # Eager: the caller gets the error, no retry.
        with pytest.raises(OperationalError):
            _as_worker(task, 5, eager=True)
        # Called as a plain function: the same.
        with pytest.raises(OperationalError):
            task(5)
        # In a worker: sent again.
        outcome, sent = _as_worker(task, 5)
    assert outcome == "retried" and sent[0]["exc"] is error
