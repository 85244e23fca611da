"""Judge tasks, routed to the `judge` queue (settings CELERY_TASK_ROUTES). They
take ids and call one service; the judgment row, claimed with a conditional
update, is the truth, so a message delivered twice does the work once
(every task is acknowledged late: common/tasks.py).

Judge calls wait on the network: run this queue with a thread pool so one
machine keeps many calls in flight, two processes per core (each judgment also
costs CPU, and a process's threads take turns on one core), with a few threads
more than the process's calls (judging/callslots.py):
`JUDGE_CALLS_PER_PROCESS=8 celery -A mlrbench_site worker -Q judge --pool threads --concurrency 12`.
"""

import logging
import threading
from collections.abc import Iterable

from celery import current_app, shared_task
from celery.signals import worker_init, worker_process_init, worker_ready
from django.conf import settings
from django.db import InterfaceError, OperationalError

from common import llm as gateway
from common.tasks import WorkerTask

from .services.queue import judgments_reap_stuck, judgments_resend_lost
from .services.run import judgment_run

logger = logging.getLogger(__name__)

DATABASE_ERRORS = (OperationalError, InterfaceError)

RETRY_SECONDS = 2
RETRIES = 5


@worker_init.connect
def _check_settings(**kwargs) -> None:
    """A worker refuses to start on settings its tasks cannot run with (the site
    runs the same system check at start-up)."""
    from django.core.exceptions import ImproperlyConfigured

    from common.tasks import task_time_limits_check

    from .checks import judge_time_limits_check

    errors = [*judge_time_limits_check(), *task_time_limits_check()]
    if errors:
        raise ImproperlyConfigured("; ".join(str(error.msg) for error in errors))


@worker_ready.connect
def _warm_up_llm_client(sender=None, **kwargs) -> None:
    # A prefork parent runs no task: its children warm up (worker_process_init).
    from celery.concurrency.prefork import TaskPool

    if isinstance(getattr(sender, "pool", None), TaskPool):
        return
    _warm_up_in_background()


@worker_process_init.connect
def _warm_up_pool_process(**kwargs) -> None:
    _warm_up_in_background()


def worker_warms_up(queues: Iterable[str]) -> bool:
    """Whether a worker consuming `queues` warms up the LLM client: only a judge
    worker's threads, many calls at once, would queue on litellm's import lock
    (gateway.warm_up). A gpu worker runs one task per process; the one that calls
    a model (MLR-Agent's coding loop) pays the import once, in minutes of work, and
    the experiment runs never do: a warm-up there is ~4 s of CPU for nothing."""
    return settings.JUDGE_QUEUE in set(queues)


def _warm_up_in_background() -> None:
    # The worker's app; its queues are set before the pool starts (prefork children
    # inherit them): -Q's, or all.
    queues = sorted(current_app.amqp.queues.consume_from)
    if not worker_warms_up(queues):
        logger.info("LLM client not warmed up: this worker takes %s", ", ".join(queues))
        return
    logger.info("LLM client warming up beside the worker (it takes %s)", ", ".join(queues))
    # Beside the worker, not before it: the worker answers pings and takes tasks
    # at once, and a task that calls a model while the warm-up still imports
    # litellm waits on that import's lock, no longer than it would have anyway.
    threading.Thread(target=gateway.warm_up, name="llm-warm-up", daemon=True).start()


@shared_task(
    bind=True,
    base=WorkerTask,
    name="judging.judgment_run",
    # A task that fails is not acknowledged-and-forgotten by design: its row is
    # queued (a failure before the claim, or a run that gave its row back) and
    # the reaper sends it again; see `retry_on` below.
    # The service stops on its own at JUDGE_TASK_SOFT_TIME_LIMIT (thread pools do
    # not enforce Celery's limits); these are the prefork pool's backstop.
    soft_time_limit=settings.JUDGE_TASK_SOFT_TIME_LIMIT + 30,
    time_limit=settings.JUDGE_TASK_TIME_LIMIT,
    ignore_result=True,
    # A database error before the claim committed, or after the run gave its row
    # back: the row is queued. Retried soon (on a fresh connection: the dead one
    # is dropped as the task ends); should the retry's message not go out, the
    # reaper sends the row again. Run eagerly, the error reaches the caller.
    retry_on=DATABASE_ERRORS,
    retry_countdown=RETRY_SECONDS,
    max_retries=RETRIES,
    retry_when_eager=False,
)
def judgment_run_task(self, judgment_id: int) -> None:
    # Connections and retries: WorkerTask, around each task in a worker.
    if not self.request.is_eager:
        # A worker answers as soon as it starts, while litellm is still being
        # imported beside it: the judgment's clock starts once that is done.
        gateway.warm_up()
    judgment_run(judgment_id=judgment_id)


@shared_task(
    bind=True,
    base=WorkerTask,
    close_when_eager=True,
    name="judging.reap_stuck",
    soft_time_limit=60,
    time_limit=120,
    ignore_result=True,
    retry_on=DATABASE_ERRORS,
    retry_countdown=RETRY_SECONDS,
    max_retries=RETRIES,
)
def reap_stuck_task(self) -> int:
    """Requeue judgments whose worker died, and send again those whose message
    was lost. A connection reused from an earlier task may be dead (PostgreSQL
    restarted, the connection terminated): WorkerTask drops it first, eager too."""
    return len(judgments_reap_stuck()) + len(judgments_resend_lost())
