"""Each judge's requests-per-minute limit, shared by every worker process.

A sliding window kept in Redis (one sorted set of call times per judge,
checked and updated atomically by a Lua script), so that 32 threads in each of
several worker processes together never send a judge more calls per minute
than its row allows. Without Redis (a development machine in eager mode) a
process-local window does the same for the one process there is.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict, deque

from django.conf import settings

WINDOW_SECONDS = 60.0

# KEYS[1] the judge's window; ARGV: window, limit, member. The time is Redis' own
# (worker machines may disagree about the time), read inside the script so that a
# call costs one round trip. Returns 0 when the call may go now (and records it),
# else the seconds to wait.
_ACQUIRE_SCRIPT = """
local key = KEYS[1]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
if redis.call('ZCARD', key) < limit then
  redis.call('ZADD', key, now, ARGV[3])
  redis.call('PEXPIRE', key, math.ceil(window * 1000))
  return '0'
end
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return tostring(tonumber(oldest[2]) + window - now)
"""


class RateLimitTimeout(Exception):
    """The judge's limit would not let a call go before the run's deadline."""


class RedisWindow:
    def __init__(self, url: str, *, prefix: str = "mlrbench:judge-rpm:"):
        import redis

        self._redis = redis.Redis.from_url(url)
        self._script = self._redis.register_script(_ACQUIRE_SCRIPT)
        self._prefix = prefix

    def try_acquire(self, key: str, limit: int, window: float = WINDOW_SECONDS) -> float:
        """0 if a call may go now (it is counted), else seconds until a slot frees."""
        wait = self._script(keys=[self._prefix + key], args=[window, limit, uuid.uuid4().hex])
        return float(wait)

    def reset(self, key: str) -> None:
        self._redis.delete(self._prefix + key)


class LocalWindow:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, deque[float]] = defaultdict(deque)

    def try_acquire(self, key: str, limit: int, window: float = WINDOW_SECONDS) -> float:
        with self._lock:
            now = time.monotonic()
            calls = self._calls[key]
            while calls and calls[0] <= now - window:
                calls.popleft()
            if len(calls) < limit:
                calls.append(now)
                return 0.0
            return calls[0] + window - now

    def reset(self, key: str) -> None:
        with self._lock:
            self._calls.pop(key, None)


_window: RedisWindow | LocalWindow | None = None
_window_lock = threading.Lock()


def window() -> RedisWindow | LocalWindow:
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
    return float(min(wait + 0.05, seconds))


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
