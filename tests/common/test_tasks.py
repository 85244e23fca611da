"""Every Celery task of the site runs on one base (common.tasks.WorkerTask): in a
worker, a broken or obsolete database connection is dropped before and after
each task; an eager task keeps its caller's. The names stay what queued
messages and routes call them."""

from unittest import mock

import pytest

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
