"""The leaderboard's one background job: recompute the boards after a write."""

from celery import shared_task

from common.tasks import WorkerTask


@shared_task(base=WorkerTask, name="leaderboard.boards_refresh", ignore_result=True)
def boards_refresh(stages: list[str] | None = None) -> None:
    """Recompute the default boards of `stages` (default: every stage) for
    the data as it is now. The queued marks go first: a write from here on
    queues the next run rather than being missed by this one."""
    from .caching import refresh_marks_clear, stages_or_all
    from .refresh import boards_warm

    chosen = stages_or_all(stages)
    refresh_marks_clear(chosen)
    boards_warm(chosen)
