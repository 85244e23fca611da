"""Waiting, bounded, for something a worker process does."""

import time

import pytest


def wait_for(condition, timeout: float = 60.0, message: str = "the condition"):
    """`condition()`'s first true value, polled until `timeout` seconds have
    passed (then the test fails, naming `message`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {message}")
