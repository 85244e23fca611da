"""Calls in flight per worker process, apart from the threads that make them.

A judge run spends most of its time in one call, but not all of it: it claims
its judgment, reads its inputs and builds the prompt before the call, and
writes the result after it. When a worker process's threads are its calls
(`--concurrency 8`, 8 calls at most), a thread doing that work holds a call slot
that no call uses; with fast answers (a small self-hosted model answers in
a few hundred milliseconds) that is a tenth of the slot's time on a loaded
machine. With `JUDGE_CALLS_PER_PROCESS` set, a process runs at most that many
calls at once, and it may have more threads than that (`--concurrency 10`
with 8 calls): while 8 threads wait on the judge, the others prepare the next
prompts and record the last answers, and a call that ends hands its slot to
a prompt that is ready. The number of calls in flight, which is what a judge
server or a provider sees, stays what the operator set.

The slots are the process's own (a semaphore, not Redis): a worker that dies
takes its slots with it, and nothing needs reaping. 0 (the default) sets no
limit of its own: the process's threads are its calls, as before.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from django.conf import settings


class CallSlotTimeout(Exception):
    """No call slot came free before the run's deadline."""


_lock = threading.Lock()
_semaphore: tuple[int, threading.BoundedSemaphore] | None = None


def _slots(limit: int) -> threading.BoundedSemaphore:
    global _semaphore
    with _lock:
        # A new limit (a test's override_settings) starts a new semaphore; calls that
        # hold a slot of the old one give it back there.
        if _semaphore is None or _semaphore[0] != limit:
            _semaphore = (limit, threading.BoundedSemaphore(limit))
        return _semaphore[1]


@contextlib.contextmanager
def call_slot(*, timeout: float) -> Iterator[None]:
    """Hold one of this process's call slots while the block runs; wait up to
    `timeout` seconds for one to come free (CallSlotTimeout after that)."""
    limit = settings.JUDGE_CALLS_PER_PROCESS  # 0: no limit (settings refuse a negative one)
    if not limit:
        yield
        return
    slots = _slots(limit)
    timeout = max(0.0, timeout)
    if not slots.acquire(timeout=timeout):
        raise CallSlotTimeout(
            f"no call slot came free in this worker process ({limit} calls in flight, "
            f"JUDGE_CALLS_PER_PROCESS) within {timeout:.0f} s"
        )
    try:
        yield
    finally:
        slots.release()
