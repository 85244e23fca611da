"""Cached public results, invalidated by a data generation.

Every cached leaderboard answer, page or chart is stored under a key that
carries the current generation (`common.cache_generation`); any write to a
judgment, a score, a submission or a review moves it on (after its
transaction commits), so the next request computes afresh. A time limit backs
this up for writes that send no signal (`QuerySet.update`, `bulk_create`);
bulk writers call `data_changed()` themselves (the `import_mlrbench` command
does, through the leaderboard's import part).
"""

from collections.abc import Callable
from typing import TypeVar

from django.conf import settings

from common.cache_generation import CacheGeneration

T = TypeVar("T")

DATA_GENERATION = CacheGeneration("leaderboard")


def cache_seconds() -> int:
    return getattr(settings, "LEADERBOARD_CACHE_SECONDS", 15 * 60)


def data_version() -> int:
    return DATA_GENERATION.current()


def data_changed() -> None:
    """Invalidate every cached result once the current transaction commits."""
    DATA_GENERATION.bump_on_commit()


def cached(namespace: str, parts: tuple[object, ...], compute: Callable[[], T]) -> T:
    return DATA_GENERATION.cached((namespace, *parts), compute, timeout=cache_seconds())
