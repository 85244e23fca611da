"""Cached results that a whole family of writes makes stale at once.

Every entry of a family is stored under a key that carries the family's
current generation number; a write that can change any of them moves the
generation on, so every entry is stale at once without knowing which keys
exist, and the old entries simply expire. Used by the leaderboard (any
judgment, score, submission or review) and by the agreement statistics.
"""

import hashlib
import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.core.cache import cache
from django.db import transaction

T = TypeVar("T")
logger = logging.getLogger(__name__)
BUMP_ATTEMPTS = 3
BUMP_RETRY_SECONDS = 0.5


def _fresh_generation() -> int:
    # Nanoseconds since the epoch: if the counter is ever evicted, the new one
    # cannot fall back to a number whose entries are still cached.
    return time.time_ns()


class CacheGeneration:
    """The generation counter of one family of cache entries, named `name`
    (also the prefix of the family's keys)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.counter_key = f"{name}:generation"

    def current(self) -> int:
        generation = cache.get(self.counter_key)
        if generation is None:
            cache.add(self.counter_key, _fresh_generation(), timeout=None)
            generation = cache.get(self.counter_key)
        return int(generation)

    def _bump_once(self) -> None:
        try:
            cache.incr(self.counter_key)
        except ValueError:
            cache.set(self.counter_key, _fresh_generation(), timeout=None)

    def bump(self) -> None:
        """Make every entry of the family stale, now. A cache that cannot be
        reached (Redis restarting) is tried again a few times; after that the
        entries' own timeout bounds how long they stay stale, and the writer
        (a judgment that is done) never fails for it."""
        for attempt in range(1, BUMP_ATTEMPTS + 1):
            try:
                self._bump_once()
                return
            except Exception as exc:  # any backend's outage; the data is safe
                if attempt == BUMP_ATTEMPTS:
                    logger.warning("cache %s not invalidated (%r): entries expire", self.name, exc)
                    return
                time.sleep(BUMP_RETRY_SECONDS * attempt)

    def bump_on_commit(self) -> None:
        """Make every entry stale once the current transaction commits (at
        once outside one), so no reader caches the old data in between."""
        transaction.on_commit(self.bump, robust=True)

    def key(self, *parts: object) -> str:
        """The cache key of one entry of the current generation."""
        digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:32]
        return f"{self.name}:{self.current()}:{digest}"

    def cached(self, parts: tuple[object, ...], compute: Callable[[], T], *, timeout: int) -> T:
        """The entry for `parts` of the current generation, computed and
        stored when missing. `timeout` backs the generation up for writes that
        send no signal (`QuerySet.update`, `bulk_create`)."""
        key = self.key(*parts)
        value: T | None = cache.get(key)
        if value is None:
            value = compute()
            cache.set(key, value, timeout=timeout)
        return value
