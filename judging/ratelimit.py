"""Each judge's requests-per-minute limit, shared by every worker process.

A moving window per judge, counted by the `limits` library (the site's one
limiter library: common/throttling.py, common/limits_storage.py) in Redis,
atomically, so that 32 threads in each of several worker processes together
never send a judge more calls per minute than its row allows. Without Redis (a
development machine in eager mode) the library's memory storage does the same
for the one process there is. A window is a whole number of seconds (Redis
expires keys in whole seconds): a fraction is rounded up, which only ever slows
a judge. The times are the workers' clocks (the library's), kept in step by NTP.
"""

from __future__ import annotations

import math
import threading
import time

from django.conf import settings
from limits import RateLimitItemPerSecond
from limits.storage import MemoryStorage, Storage
from limits.strategies import MovingWindowRateLimiter

from common.limits_storage import limits_storage

WINDOW_SECONDS = 60.0
_NAMESPACE = "judge-rpm"
_KEY_PREFIX = "mlrbench-limit"
# When the window is full but its oldest call has just left it: ask again soon.
_MIN_WAIT_SECONDS = 0.01


class RateLimitTimeout(Exception):
    """The judge's limit would not let a call go before the run's deadline."""


class _JudgeRate(RateLimitItemPerSecond):
    """`limit` calls per `window` seconds, kept under one key per judge whatever
    the limit (a changed limit applies to the calls already counted)."""

    def key_for(self, *identifiers: bytes | str | int | float) -> str:
        return "/".join([self.namespace, *(str(part) for part in identifiers)])


class JudgeWindow:
    """The judges' moving windows on one `limits` storage."""

    def __init__(self, storage: Storage) -> None:
        self._limiter = MovingWindowRateLimiter(storage)

    @staticmethod
    def _rate(limit: int, window: float) -> _JudgeRate:
        return _JudgeRate(limit, max(1, math.ceil(window)), namespace=_NAMESPACE)

    def try_acquire(self, key: str, limit: int, window: float = WINDOW_SECONDS) -> float:
        """0 if a call may go now (it is counted), else seconds until a slot frees."""
        rate = self._rate(limit, window)
        if self._limiter.hit(rate, key):
            return 0.0
        reset = self._limiter.get_window_stats(rate, key).reset_time
        return max(_MIN_WAIT_SECONDS, reset - time.time())

    def reset(self, key: str) -> None:
        self._limiter.clear(self._rate(1, WINDOW_SECONDS), key)


class RedisWindow(JudgeWindow):
    """The windows in Redis at `url`, shared by every process that uses it."""

    def __init__(self, url: str) -> None:
        super().__init__(limits_storage(url, key_prefix=_KEY_PREFIX))


class LocalWindow(JudgeWindow):
    """The windows of this process only (no Redis)."""

    def __init__(self) -> None:
        super().__init__(MemoryStorage())


_window: JudgeWindow | None = None
_window_lock = threading.Lock()


def window() -> JudgeWindow:
    global _window
    with _window_lock:
        if _window is None:
            url = settings.REDIS_URL or settings.CELERY_BROKER_URL
            _window = (
                RedisWindow(url) if url.startswith(("redis://", "rediss://")) else LocalWindow()
            )
        return _window


def judge_call_turn(*, judge_id: int, limit: int) -> float:
    """0 when the judge may be called now (the call is counted), else the seconds
    to wait before asking again. It never blocks: a caller holding something
    scarce (a call slot) gives it back before it waits."""
    seconds = settings.JUDGE_RATE_WINDOW_SECONDS * (1 + settings.JUDGE_RATE_GUARD)
    wait = window().try_acquire(str(judge_id), limit, seconds)
    if wait <= 0:
        return 0.0
    # A little more than needed so that we do not spin on the boundary.
    return float(min(wait + 0.05, math.ceil(seconds)))


def rate_limit_timeout(limit: int) -> RateLimitTimeout:
    return RateLimitTimeout(
        f"the judge's limit of {limit} requests per minute leaves no slot before the "
        "run's time limit"
    )


def judge_call_acquire(*, judge_id: int, limit: int, deadline: float | None = None) -> float:
    """Block until the judge may be called again; returns the seconds waited.
    `deadline` is a `time.monotonic()` value: if no slot frees before it,
    `RateLimitTimeout` is raised instead of waiting past it.
    """
    waited = 0.0
    while True:
        wait = judge_call_turn(judge_id=judge_id, limit=limit)
        if wait <= 0:
            return waited
        if deadline is not None and time.monotonic() + wait > deadline:
            raise rate_limit_timeout(limit)
        time.sleep(wait)
        waited += wait
