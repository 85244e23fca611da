"""The agreement statistics are cached per (stage, judge) under a generation
number; any write that can change them (a review submitted or edited, a
judgment or one of its scores saved or deleted) moves the generation on, so
every cached entry is stale at once without knowing which keys exist."""

import time

from django.core.cache import cache

GENERATION_KEY = "reviews:agreement:generation"
# A safety net for writes that bypass signals (bulk updates): entries expire anyway.
ENTRY_TIMEOUT_SECONDS = 60 * 60


def _fresh_generation() -> int:
    # Never reuse a number an evicted counter once had: start from the clock.
    return time.time_ns()


def agreement_generation() -> int:
    generation = cache.get(GENERATION_KEY)
    if generation is None:
        cache.add(GENERATION_KEY, _fresh_generation(), timeout=None)
        generation = cache.get(GENERATION_KEY)
    return int(generation)


def agreement_invalidate() -> None:
    try:
        cache.incr(GENERATION_KEY)
    except ValueError:
        cache.set(GENERATION_KEY, _fresh_generation(), timeout=None)


def agreement_cache_key(stage: str, judge: str | None) -> str:
    return f"reviews:agreement:{agreement_generation()}:{stage}:{judge or ''}"
