"""The base of the site's Celery tasks (`@shared_task(base=WorkerTask, ...)`).

Every task is acknowledged late (`acks_late`): its message is acknowledged
once the task has run, not when a worker takes it, so a worker that dies
mid-task (`reject_on_worker_lost`: killed, out of memory) leaves the message
to the broker, which delivers it again. The tasks are written for that: each
takes ids and calls one service whose row, claimed with a conditional update,
is the truth, so a message delivered twice does the work once.

Around each task in a worker it does what Django does around a request: a
database connection that is broken (PostgreSQL restarted, the connection
terminated) or older than CONN_MAX_AGE is dropped before the task and after it,
a good one kept (see CELERY_DB_REUSE_MAX). A task run eagerly, or called as a
plain function, runs inside its caller's connection, and maybe its transaction:
left alone, unless the task says `close_when_eager` (one that is never part of a
caller's work, like a reaper) and runs eagerly.

Retries are declared, not written in each task: `retry_on` lists the
exceptions after which the task is sent again, `retry_countdown` seconds later,
at most `max_retries` times; once those are spent `retries_exhausted` has the
last word (by default the exception propagates and the task fails). An eager
run (no broker: tests, the embedded defaults) ends in Celery's eager retry (its
result's state is RETRY) unless the task says `retry_when_eager = False`: then
the exception reaches the caller. A task called as a plain function raises it.
"""

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from celery import Task
from django.conf import settings
from django.core.checks import CheckMessage, Error
from django.db import close_old_connections, connections

logger = logging.getLogger(__name__)


class WorkerTask(Task):  # type: ignore[misc]  # celery ships no types
    acks_late = True
    reject_on_worker_lost = True
    close_when_eager = False
    # Declarative retries (see the module's docstring); `max_retries` is Celery's.
    retry_on: tuple[type[Exception], ...] = ()
    retry_countdown: float = 30
    retry_when_eager = True

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        request = self.request
        closes = not request.called_directly and (self.close_when_eager or not request.is_eager)
        if closes:
            close_old_connections()
        try:
            return super().__call__(*args, **kwargs)
        except self.retry_on as exc:
            if request.called_directly or (request.is_eager and not self.retry_when_eager):
                raise
            if self.max_retries is not None and request.retries >= self.max_retries:
                return self.retries_exhausted(exc, *args, **kwargs)
            raise self.retry(exc=exc, countdown=self.retry_countdown) from exc
        finally:
            if closes:
                close_old_connections()

    def retries_exhausted(self, exc: Exception, *args: Any, **kwargs: Any) -> Any:
        """What a task does when `retry_on` struck once more than `max_retries`
        allows: by default the exception propagates (the task fails). Its return
        value is the task's."""
        raise exc


def task_time_limits_errors(app: Any) -> list[str]:
    """Every registered task whose soft time limit (its own, or the global
    CELERY_TASK_SOFT_TIME_LIMIT) is above its hard one: Celery refuses to send
    it (`soft_time_limit must be less than or equal to time_limit`), beat's
    sends included, so the mistake shows only in production logs."""
    from django.apps import apps

    # Every app's tasks module, imported now (the worker's autodiscovery would
    # run the Django fixup's own checks, and so this one, again).
    app.loader.autodiscover_tasks([config.name for config in apps.get_app_configs()])
    errors = []
    for name, task in sorted(app.tasks.items()):
        soft, hard = task.soft_time_limit, task.time_limit
        if soft and hard and soft > hard:
            errors.append(
                f"task {name}: soft time limit {soft} s is above its time limit {hard} s "
                "(a task without its own soft limit takes CELERY_TASK_SOFT_TIME_LIMIT); "
                "Celery refuses to send it"
            )
    return errors


def task_time_limits_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """`manage.py check` (and a worker's start) with the tasks' limits."""
    from celery import current_app

    return [
        Error(
            message, hint="Give the task a soft_time_limit below its time_limit.", id="common.E001"
        )
        for message in task_time_limits_errors(current_app._get_current_object())
    ]


# ------------------------------------------------ without a broker: after the response

_background_lock = threading.Lock()
_background: ThreadPoolExecutor | None = None
_background_pending: set[Future[None]] = set()


def run_soon(function: Callable[[], object]) -> None:
    """Run `function` (work a Celery task would do: judging, an agent run's stages)
    in one of BACKGROUND_THREADS threads of this process, or now when that is 0.

    Without a broker (the embedded defaults) Celery runs tasks eagerly, inside
    the request that queued them: an upload then waited for its judges, and
    `POST /api/agent-runs/` for the model's retries. Here the request answers
    first and the page shows the rows' progress as a worker's would. Pending
    work is finished before the process exits (the executor's threads are
    joined at exit); the reapers resend what a killed process left queued."""
    global _background
    threads = settings.BACKGROUND_THREADS
    if threads <= 0:
        function()
        return
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="background")
        future = _background.submit(_background_run, function)
        _background_pending.add(future)
    future.add_done_callback(_background_forget)


def _background_run(function: Callable[[], object]) -> None:
    try:
        function()
    except Exception:
        # No caller to tell: the rows say what failed (a task marks its own row).
        logger.exception("background work failed")
    finally:
        # This thread's connections are its own: closed, as a request's are.
        connections.close_all()


def _background_forget(future: Future[None]) -> None:
    with _background_lock:
        _background_pending.discard(future)


def background_wait(timeout: float | None = None) -> bool:
    """Wait until the work `run_soon` has in hand is done (tests; a command that
    must not exit early); True when none is left. Work queued by work in hand
    (an agent run's next stage) is waited for too."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _background_lock:
            pending = set(_background_pending)
        if not pending:
            return True
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        _done, not_done = wait(pending, timeout=left)
        if not_done:
            return False
