"""Cached results that a whole family of writes makes stale at once.

Every entry of a family is stored under a key that carries the family's
current generation number; a write that can change any of them moves the
generation on, so every entry is stale at once without knowing which keys
exist, and the old entries simply expire. Used by the leaderboard (any
judgment, score, submission or review) and by the agreement statistics.

An entry may also be kept as its family's latest value (`stale_for`): when the
current generation has none yet, a reader is given that latest one instead of
computing, provided the data moved past it less than `stale_for` seconds ago,
and `refresh` is asked to compute the new one in the background (a worker).
So a write costs no reader the seconds a hundred-agent board takes, and no
answer is ever more than `stale_for` seconds behind the data. Whatever is built
from a stale value is not stored, and `staleness()` tells the request.
"""

import hashlib
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from django.core.cache import cache
from django.db import transaction

T = TypeVar("T")
logger = logging.getLogger(__name__)
BUMP_ATTEMPTS = 3
BUMP_RETRY_SECONDS = 0.5
# How long the latest value of an entry is kept for readers after a write, and
# how long the moment a generation was superseded is remembered.
LATEST_SECONDS = 24 * 60 * 60


@dataclass
class Staleness:
    """Whether what was read in a scope (a request, one computation) included a
    value older than the current data."""

    stale: bool = False


_scope: ContextVar[Staleness | None] = ContextVar("cache_generation_scope", default=None)
_fresh_only: ContextVar[bool] = ContextVar("cache_generation_fresh_only", default=False)
_pinned: ContextVar[dict[str, int] | None] = ContextVar("cache_generation_pinned", default=None)


@contextmanager
def staleness() -> Iterator[Staleness]:
    """A scope whose reads report whether any was served stale (a request's)."""
    scope = Staleness()
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


@contextmanager
def fresh_reads() -> Iterator[None]:
    """Reads inside compute what is missing rather than take a stale value (a
    release freezes the data as it is, never as it was)."""
    token = _fresh_only.set(True)
    try:
        yield
    finally:
        _fresh_only.reset(token)


@contextmanager
def generations_pinned(*families: "CacheGeneration") -> Iterator[None]:
    """Entries stored in this scope carry the generations `families` had at its
    start, read before any data is. A computation that reads the data first and
    stores what it built later (a worker warming boards) would otherwise store
    what it read before a write under the generation that write moved on to, and
    the refresh that write queued would find the entry there and keep it."""
    token = _pinned.set({**(_pinned.get() or {}), **{f.name: f.current() for f in families}})
    try:
        yield
    finally:
        _pinned.reset(token)


def served_stale() -> bool:
    """Whether the current scope (the request) was given a stale value."""
    scope = _scope.get()
    return scope is not None and scope.stale


def _mark_stale() -> None:
    scope = _scope.get()
    if scope is not None:
        scope.stale = True


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
        pinned = _pinned.get()
        if pinned is not None and self.name in pinned:
            return pinned[self.name]
        generation = cache.get(self.counter_key)
        if generation is None:
            cache.add(self.counter_key, _fresh_generation(), timeout=None)
            generation = cache.get(self.counter_key)
        return int(generation)

    def _bump_once(self) -> None:
        try:
            generation = cache.incr(self.counter_key)
        except ValueError:
            cache.set(self.counter_key, _fresh_generation(), timeout=None)
        else:
            cache.set(self._superseded_key(generation - 1), time.time(), timeout=LATEST_SECONDS)

    def _superseded_key(self, generation: int) -> str:
        return f"{self.name}:superseded:{generation}"

    def bump(self) -> None:
        """Make every entry of the family stale, now. A cache that cannot be
        reached (Redis restarting) is tried again a few times; after that the
        entries' own timeout bounds how long they stay stale, and the writer
        (a judgment that is done) never fails for it."""
        import tenacity

        try:
            # Waits of BUMP_RETRY_SECONDS, then twice that, and so on.
            tenacity.Retrying(
                stop=tenacity.stop_after_attempt(BUMP_ATTEMPTS),
                wait=tenacity.wait_incrementing(BUMP_RETRY_SECONDS, BUMP_RETRY_SECONDS),
                reraise=True,
            )(self._bump_once)
        except Exception as exc:  # any backend's outage; the data is safe
            logger.warning("cache %s not invalidated (%r): entries expire", self.name, exc)

    def bump_on_commit(self) -> None:
        """Make every entry stale once the current transaction commits (at
        once outside one), so no reader caches the old data in between."""
        transaction.on_commit(self.bump, robust=True)

    @staticmethod
    def _digest(parts: tuple[object, ...]) -> str:
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]

    def key(self, *parts: object) -> str:
        """The cache key of one entry of the current generation."""
        return f"{self.name}:{self.current()}:{self._digest(parts)}"

    def _stale_value(self, digest: str, stale_for: float) -> object | None:
        """The entry's latest value, if the data moved past it under `stale_for` ago."""
        latest: tuple[int, object] | None = cache.get(f"{self.name}:latest:{digest}")
        if latest is None:
            return None
        generation, value = latest
        superseded = cache.get(self._superseded_key(generation))
        if superseded is None or time.time() - superseded > stale_for:
            return None
        return value

    def cached(
        self,
        parts: tuple[object, ...],
        compute: Callable[[], T],
        *,
        timeout: int,
        stale_for: float = 0,
        refresh: Callable[[], None] | None = None,
    ) -> T:
        """The entry for `parts` of the current generation, computed and
        stored when missing. `timeout` backs the generation up for writes that
        send no signal (`QuerySet.update`, `bulk_create`). With `stale_for`,
        a miss shortly after a write is answered with the latest value while
        `refresh` brings the entry up to date (see the module docstring)."""
        generation = self.current()
        digest = self._digest(parts)
        key = f"{self.name}:{generation}:{digest}"
        value: T | None = cache.get(key)
        if value is not None:
            return value
        if stale_for > 0 and not _fresh_only.get():
            stale = self._stale_value(digest, stale_for)
            if stale is not None:
                if refresh is not None:
                    refresh()
                _mark_stale()
                return stale  # type: ignore[return-value]
        with staleness() as inner:
            value = compute()
        if inner.stale:  # built on a stale part: served, never stored
            _mark_stale()
            return value
        cache.set(key, value, timeout=timeout)
        if stale_for > 0:  # the latest value outlives its generation's entry
            cache.set(f"{self.name}:latest:{digest}", (generation, value), LATEST_SECONDS)
        return value
