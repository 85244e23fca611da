"""Celery tasks of MLR-Agent runs. The LLM stages go to the `judge` queue and the
experiment stage to the `gpu` queue (CELERY_TASK_ROUTES); a run is a chain of
its stages that are not done. Tasks take ids and call one service: the stage's
row, claimed with a conditional update, is the truth, so a redelivered or
resent message does a finished stage no second time."""

from celery import chain, shared_task
from celery.exceptions import Ignore
from django.conf import settings

from common.tasks import WorkerTask
from experiments.slots import SlotsBusy

_HARD_LIMIT = settings.EXPERIMENT_MAX_TIME_LIMIT_SECONDS + 600
# The stage's slots are busy: sent again every 30 s, for two hours.
_SLOTS_BUSY = {"retry_on": (SlotsBusy,), "retry_countdown": 30, "max_retries": 240}


def _execute(run_id: int, stage: str) -> str:
    from .services import StageHeld, agent_run_stage_execute

    try:
        outcome = agent_run_stage_execute(run_id=run_id, stage=stage)
    except StageHeld as exc:
        # Another worker holds the stage (or this is an old message): its chain goes on there.
        raise Ignore() from exc
    if outcome == "stopped":
        raise Ignore()  # the run ended: the rest of the chain has nothing to do
    return outcome


@shared_task(base=WorkerTask, name="agent_runs.llm_stage", time_limit=_HARD_LIMIT, **_SLOTS_BUSY)
def llm_stage_task(run_id: int, stage: str) -> str:
    return _execute(run_id, stage)


@shared_task(
    base=WorkerTask, name="agent_runs.experiment_stage", time_limit=_HARD_LIMIT, **_SLOTS_BUSY
)
def experiment_stage_task(run_id: int, stage: str) -> str:
    return _execute(run_id, stage)


@shared_task(
    base=WorkerTask,
    close_when_eager=True,
    name="agent_runs.resume_stalled",
    # Both limits, always: a task's hard limit under the global soft one
    # (CELERY_TASK_SOFT_TIME_LIMIT) is refused by Celery at every send
    # (common/tasks.py task_time_limits_check).
    soft_time_limit=60,
    time_limit=120,
    ignore_result=True,
)
def resume_stalled_task() -> int:
    from .services import agent_runs_resume_stalled

    return len(agent_runs_resume_stalled())


def stage_chain(run_id: int, stages: list[str]):
    """The chain of `stages` for one run, each on its queue."""
    from .models import StageName

    return chain(
        *(
            (experiment_stage_task if stage == StageName.EXPERIMENT else llm_stage_task).si(
                run_id, stage
            )
            for stage in stages
        )
    )
