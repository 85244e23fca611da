"""Cached public results, invalidated by a data generation.

Every cached leaderboard answer, page or chart is stored under a key that
carries the current generation (`common.cache_generation`); any write to a
judgment, a score, a submission or a review moves it on (after its
transaction commits), so the next request computes afresh. A time limit backs
this up for writes that send no signal (`QuerySet.update`, `bulk_create`);
bulk writers call `data_changed()` themselves (the `import_mlrbench` command
does, through the leaderboard's import part).

The boards that take seconds at full scale (a stage's ranking, the judges'
board) are `cached_recent`: for `stale_seconds()` after a write, a reader gets
the board as it was while a worker recomputes it (`leaderboard.boards_refresh`,
queued by the write), so the first request after a judgment lands costs no
more than any other; pages and answers built on such a board say so.
"""

import logging
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from common.cache_generation import CacheGeneration

T = TypeVar("T")
logger = logging.getLogger(__name__)

DATA_GENERATION = CacheGeneration("leaderboard")
REFRESH_QUEUED_KEY = "leaderboard:refresh-queued"


def cache_seconds() -> int:
    return getattr(settings, "LEADERBOARD_CACHE_SECONDS", 15 * 60)


def data_version() -> int:
    return DATA_GENERATION.current()


def stale_seconds() -> float:
    """How far behind the data a board may be answered while a worker
    recomputes it. 0 without a broker: every task runs inline there, so the
    reader computes (the embedded defaults)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return 0
    return float(settings.LEADERBOARD_STALE_SECONDS)


def refresh_soon() -> None:
    """Queue one recompute of the boards readers land on; one at a time (the
    task clears the mark as it starts, so a write during it queues the next).
    A broker that refuses costs nothing but freshness: after `stale_seconds()`
    readers compute for themselves."""
    if stale_seconds() <= 0 or not cache.add(REFRESH_QUEUED_KEY, 1, int(stale_seconds())):
        return
    from .tasks import boards_refresh

    try:
        boards_refresh.delay()
    except Exception as exc:  # any broker's outage; readers compute after the grace
        cache.delete(REFRESH_QUEUED_KEY)
        logger.warning("leaderboard refresh not queued (%r): readers will compute", exc)


def data_changed() -> None:
    """Invalidate every cached result once the current transaction commits,
    and have a worker recompute the boards."""
    DATA_GENERATION.bump_on_commit()
    transaction.on_commit(refresh_soon, robust=True)


def cached(namespace: str, parts: tuple[object, ...], compute: Callable[[], T]) -> T:
    return DATA_GENERATION.cached((namespace, *parts), compute, timeout=cache_seconds())


def cached_recent(namespace: str, parts: tuple[object, ...], compute: Callable[[], T]) -> T:
    """`cached`, or for `stale_seconds()` after a write the value as it was,
    while a worker recomputes it (see the module docstring)."""
    return DATA_GENERATION.cached(
        (namespace, *parts),
        compute,
        timeout=cache_seconds(),
        stale_for=stale_seconds(),
        refresh=refresh_soon,
    )
