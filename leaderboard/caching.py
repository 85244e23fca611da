"""Cached public results, invalidated by data generations.

Every cached answer (an API payload, a page's board, a chart) is stored once,
under a key that carries a generation (`common.cache_generation`): one per
stage for what a stage's board shows (its ranking, its page, its judges'
board), and one for the answers that span stages (judgment lists, agents'
pages, the export). A write moves on the generation of the stage it changes
and the cross-stage one (after its transaction commits), so the other stages'
boards stay cached; a write that no stage owns (a task, an agent, a judge)
moves every one. Writers say what they changed with
`common.results.results_changed` (a service at its event, or the admin's
`common.results_admin.ResultsAdminMixin`), which calls
`boards_changed` here after the commit; `import_mlrbench` makes every board
stale once, at its end, through the leaderboard's import part, which also
computes the boards there and then. A time limit backs this up for writes
that say nothing (a `QuerySet.update` in a shell).

A stage's answers are `cached_stage(..., recent=True)`: for `stale_seconds()`
after a write, a reader gets the answer as it was while a worker recomputes
that stage (`leaderboard.boards_refresh`, queued by the write), so the first
request after a judgment lands costs no more than any other; pages and
answers built on such an answer say so.
"""

import logging
from collections.abc import Callable, Iterable
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache

from common.cache_generation import CacheGeneration

T = TypeVar("T")
logger = logging.getLogger(__name__)

# The answers that span stages (and, for what is not a stage's, everything).
DATA_GENERATION = CacheGeneration("leaderboard")
REFRESH_QUEUED_KEY = "leaderboard:refresh-queued"


def stage_generation(stage: str) -> CacheGeneration:
    """The generation of what one stage's board shows."""
    return CacheGeneration(f"leaderboard:stage:{stage}")


def stages_or_all(stages: Iterable[str] | None) -> tuple[str, ...]:
    """`stages`, or every stage with a board when None."""
    if stages is not None:
        return tuple(str(stage) for stage in stages)
    from .selectors.counting import LEADERBOARD_STAGES

    return tuple(str(stage) for stage in LEADERBOARD_STAGES)


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


def refresh_soon(stages: Iterable[str] | None = None) -> None:
    """Queue one recompute of the boards of `stages` (default: all); one at a
    time per stage (the task clears a stage's mark as it starts, so a write
    during it queues the next). A broker that refuses costs nothing but
    freshness: after `stale_seconds()` readers compute for themselves."""
    if stale_seconds() <= 0:
        return
    marked = [
        stage
        for stage in stages_or_all(stages)
        if cache.add(f"{REFRESH_QUEUED_KEY}:{stage}", 1, int(stale_seconds()))
    ]
    if not marked:
        return
    from .tasks import boards_refresh

    try:
        boards_refresh.delay(stages=marked)
    except Exception as exc:  # any broker's outage; readers compute after the grace
        cache.delete_many([f"{REFRESH_QUEUED_KEY}:{stage}" for stage in marked])
        logger.warning("leaderboard refresh not queued (%r): readers will compute", exc)


def refresh_marks_clear(stages: Iterable[str]) -> None:
    cache.delete_many([f"{REFRESH_QUEUED_KEY}:{stage}" for stage in stages])


def generations_bump(stages: Iterable[str] | None = None) -> None:
    """Make stale, at once, the answers of `stages` (default: all) and those
    that span stages."""
    DATA_GENERATION.bump()
    for stage in stages_or_all(stages):
        stage_generation(stage).bump()


def boards_changed(stages: tuple[str, ...] | None) -> None:
    """The leaderboard's part of `common.results.results_changed`, after the
    commit (settings `RESULTS_CHANGED_HOOKS`): make stale what a write to
    `stages` (None: to no stage in particular, so to all) changed, and have a
    worker recompute those stages' boards."""
    generations_bump(stages)
    from .selectors.counting import LEADERBOARD_STAGES

    # A method's (an objective task's) stage has no board of its own to recompute.
    refresh_soon([stage for stage in stages_or_all(stages) if stage in LEADERBOARD_STAGES])


def cached(namespace: str, parts: tuple[object, ...], compute: Callable[[], T]) -> T:
    """An answer that spans stages."""
    return DATA_GENERATION.cached((namespace, *parts), compute, timeout=cache_seconds())


def cached_stage(
    stage: str,
    namespace: str,
    parts: tuple[object, ...],
    compute: Callable[[], T],
    *,
    recent: bool = False,
) -> T:
    """An answer about one stage. `recent`: for `stale_seconds()` after a write
    the answer as it was, while a worker recomputes it (see the module docstring)."""
    return stage_generation(stage).cached(
        (namespace, *parts),
        compute,
        timeout=cache_seconds(),
        stale_for=stale_seconds() if recent else 0,
        refresh=(lambda: refresh_soon([stage])) if recent else None,
    )
