"""The requests-per-minute window lives in Redis, so separate processes share it."""

import subprocess
import sys
import time

import pytest
from django.conf import settings

from judging.ratelimit import LocalWindow, RateLimitTimeout, RedisWindow, judge_call_acquire
from tests.conftest import PROJECT_ROOT

COUNT_IN_SUBPROCESS = """
import sys
from judging.ratelimit import RedisWindow
window = RedisWindow(sys.argv[1])
print(sum(window.try_acquire("shared-judge", 5) == 0 for _ in range(5)))
"""


def test_two_processes_together_get_only_the_limit():
    RedisWindow(settings.REDIS_URL).reset("shared-judge")
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", COUNT_IN_SUBPROCESS, settings.REDIS_URL],
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    granted = [int(process.communicate(timeout=60)[0]) for process in processes]

    assert sum(granted) == 5
    wait = RedisWindow(settings.REDIS_URL).try_acquire("shared-judge", 5)
    assert 0 < wait <= 60


@pytest.mark.parametrize("window", [LocalWindow(), None])
def test_a_slot_frees_when_the_window_slides(window):
    window = window or RedisWindow(settings.REDIS_URL)
    window.reset("judge-x")

    assert window.try_acquire("judge-x", 2, window=1) == 0
    assert window.try_acquire("judge-x", 2, window=1) == 0
    wait = window.try_acquire("judge-x", 2, window=1)
    assert 0 < wait <= 1
    time.sleep(wait + 0.05)
    assert window.try_acquire("judge-x", 2, window=1) == 0


def test_a_fraction_of_a_second_rounds_the_window_up():
    # Redis expires keys in whole seconds: 0.5 s counts as 1 s, never less.
    window = RedisWindow(settings.REDIS_URL)
    window.reset("judge-y")
    window.try_acquire("judge-y", 1, window=0.5)

    assert 0.5 < window.try_acquire("judge-y", 1, window=0.5) <= 1


def test_waiting_past_the_runs_deadline_is_refused():
    RedisWindow(settings.REDIS_URL).reset("991")
    judge_call_acquire(judge_id=991, limit=1)

    with pytest.raises(RateLimitTimeout, match="1 requests per minute"):
        judge_call_acquire(judge_id=991, limit=1, deadline=time.monotonic() + 1)
