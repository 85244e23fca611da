"""The leaderboard's one background job: recompute the boards after a write."""

from celery import shared_task
from django.core.cache import cache

from .caching import REFRESH_QUEUED_KEY


@shared_task(name="leaderboard.boards_refresh", ignore_result=True)
def boards_refresh() -> None:
    """Recompute every stage's default board and judges' board of the data as
    it is now. The queued mark goes first: a write from here on queues the
    next run rather than being missed by this one."""
    from .payloads import boards_warm

    cache.delete(REFRESH_QUEUED_KEY)
    boards_warm()
