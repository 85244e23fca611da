"""The one "ask again until it is done or the time is up" loop of the site's own
code (a command's `--wait`, a worker waiting for a slot, a command waiting for
a record the worker writes next). Pure Python, no Django: waits are `sleep`
calls that a test can replace, and the clock is monotonic."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll_until(
    check: Callable[[], T | None],
    *,
    every: float,
    timeout: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T | None:
    """Call `check` until it returns something other than None, and return that;
    wait `every` seconds between calls. With a `timeout` (seconds), None once a
    call that returned None ended past it; `check` is always called at least once."""
    deadline = None if timeout is None else clock() + timeout
    while True:
        result = check()
        if result is not None:
            return result
        if deadline is not None and clock() >= deadline:
            return None
        sleep(every)
