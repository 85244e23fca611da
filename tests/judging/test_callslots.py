"""A worker process's call slots (JUDGE_CALLS_PER_PROCESS): at most that many
calls at once, however many threads ask; no limit when it is 0."""

import threading
import time

import pytest

from judging.callslots import CallSlotTimeout, call_slot


def test_without_a_limit_every_thread_calls_at_once(settings):
    settings.JUDGE_CALLS_PER_PROCESS = 0
    with call_slot(timeout=0), call_slot(timeout=0), call_slot(timeout=0):
        pass


def test_no_more_calls_at_once_than_the_process_has_slots(settings):
    settings.JUDGE_CALLS_PER_PROCESS = 2
    lock = threading.Lock()
    in_flight, most = 0, 0

    def call():
        nonlocal in_flight, most
        with call_slot(timeout=10):
            with lock:
                in_flight += 1
                most = max(most, in_flight)
            time.sleep(0.05)  # about time: the call holds its slot a while, so calls overlap
            with lock:
                in_flight -= 1

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert most == 2


def test_a_slot_that_does_not_come_free_in_time_is_an_error_and_a_freed_one_is_reused(settings):
    settings.JUDGE_CALLS_PER_PROCESS = 1
    with call_slot(timeout=0):
        started = time.monotonic()
        with (
            pytest.raises(CallSlotTimeout, match="no call slot came free"),
            call_slot(timeout=0.2),
        ):
            pass
        assert time.monotonic() - started >= 0.2
    with call_slot(timeout=0):  # given back: free again at once
        pass
