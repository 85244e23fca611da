"""Celery tasks of the experiments app: experiment runs, routed to the `gpu`
queue by CELERY_TASK_ROUTES.

Tasks take ids and call one service. The run's row is the truth: the service
claims it with a conditional update (queued -> running), so a redelivered
message does nothing twice.
"""

from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from common.tasks import WorkerTask
from experiments.slots import HostTooSmall, SlotsBusy

# Beyond the longest run a job may ask for: the sandbox enforces each run's own
# limit; this only catches a worker stuck outside it.
_HARD_LIMIT = settings.EXPERIMENT_MAX_TIME_LIMIT_SECONDS + 600


class _ExperimentRunTask(WorkerTask):
    def retries_exhausted(self, exc: Exception, *args: Any, **kwargs: Any) -> None:
        from experiments.runner import experiment_give_up

        run_id = kwargs["run_id"] if "run_id" in kwargs else args[0]
        experiment_give_up(run_id=run_id, reason=f"no slot became free: {exc}")


@shared_task(
    # Named after the app it was written in (benchmark), not this one: messages
    # queued before the experiments app existed, and the route in
    # CELERY_TASK_ROUTES, still name it so.
    name="benchmark.experiment_run",
    bind=True,
    base=_ExperimentRunTask,
    soft_time_limit=_HARD_LIMIT - 120,
    time_limit=_HARD_LIMIT,
    # Busy slots or a host too small: back to the queue, for this or another
    # host, every 30 s for two hours; then the run is given up.
    retry_on=(SlotsBusy, HostTooSmall),
    retry_countdown=30,
    max_retries=240,
)
def experiment_run_task(self, run_id: int) -> None:
    from experiments.models import ExperimentStatus
    from experiments.runner import experiment_execute

    run = experiment_execute(run_id=run_id)
    if run is not None and run.status == ExperimentStatus.RUNNING and not self.request.is_eager:
        # Another worker holds it (this is a redelivered message). Look again once
        # its heartbeat could have gone stale: a lost worker's run is then taken over.
        raise self.retry(countdown=settings.LEASE_STALE_SECONDS + 30)


@worker_ready.connect
def _gpu_host_announce(sender=None, **kwargs) -> None:
    consumer = getattr(sender, "task_consumer", None)
    queues = {queue.name for queue in getattr(consumer, "queues", [])}
    if settings.GPU_QUEUE in queues:
        from experiments.slots import gpu_host_announce

        gpu_host_announce()
