"""The one way tests wait for something another process or thread does:
poll a condition until it holds or a deadline passes. Nothing here needs
pytest (the judging fault drill and perf/ scripts use it too); a timeout is
an AssertionError, which pytest reports as the test's failure.

A fixed `time.sleep` in a test is only for a test about time itself (a
window that must slide, a message that must not come); each says why."""

import socket
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The condition did not hold within the timeout."""


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float = 60.0,
    interval: float = 0.2,
    message: str = "the condition",
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """`condition()`'s first true value, polled every `interval` seconds until
    `timeout` seconds have passed, then WaitTimeout naming `message`.
    Exceptions of the `ignoring` types count as not yet (a server still
    starting); any other exception ends the wait at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except ignoring:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout:g} s waiting for {message}")
        time.sleep(interval)


def port_listening(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on `host:port` now."""
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, port)) == 0
