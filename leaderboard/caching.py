"""Cached public results, invalidated by a data version.

Every cached leaderboard, API page or chart is stored under a key that
carries the current data version; any write to a judgment, a score, a
submission or a review bumps the version (after its transaction commits), so
the next request computes afresh and old entries simply expire. A time limit
backs this up for writes that send no signal (`QuerySet.update`,
`bulk_create`); bulk writers call `data_changed()` themselves (the
`import_mlrbench` command does, through the leaderboard's import part).
"""

import hashlib
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

VERSION_KEY = "leaderboard:data-version"

T = TypeVar("T")


def cache_seconds() -> int:
    return getattr(settings, "LEADERBOARD_CACHE_SECONDS", 15 * 60)


def _fresh_version() -> int:
    # Milliseconds since the epoch: if the version key is ever evicted, the
    # new one cannot fall back to a number whose entries are still cached.
    return int(time.time() * 1000)


def data_version() -> int:
    version = cache.get(VERSION_KEY)
    if version is None:
        cache.add(VERSION_KEY, _fresh_version(), timeout=None)
        version = cache.get(VERSION_KEY)
    return int(version)


def _bump() -> None:
    try:
        cache.incr(VERSION_KEY)
    except ValueError:
        cache.set(VERSION_KEY, _fresh_version(), timeout=None)


def data_changed() -> None:
    """Invalidate every cached result once the current transaction commits."""
    transaction.on_commit(_bump)


def cache_key(namespace: str, *parts: object) -> str:
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()[:32]
    return f"leaderboard:{namespace}:{data_version()}:{digest}"


def cached(namespace: str, parts: tuple, compute: Callable[[], T]) -> T:
    key = cache_key(namespace, *parts)
    value = cache.get(key)
    if value is None:
        value = compute()
        cache.set(key, value, timeout=cache_seconds())
    return value
