"""An intake's objects go to the store several at a time, and a failure is
reported with what was done, once nothing is in flight any more."""

import threading

import pytest

from common.storage import objects_each


def test_objects_are_sent_several_at_a_time(settings):
    settings.STORAGE_THREADS = 4
    # Each request waits for three others: only concurrent requests get past it.
    together = threading.Barrier(4, timeout=60)
    names: set[str] = set()

    def send(item: int) -> None:
        names.add(threading.current_thread().name)
        together.wait()

    done, error = objects_each(send, range(8))

    assert error is None
    assert sorted(done) == list(range(8))
    assert len(names) == 4 and all(name.startswith("storage") for name in names)


@pytest.mark.parametrize("threads", [1, 4])
def test_a_failed_request_is_returned_with_every_other_one_finished(settings, threads):
    settings.STORAGE_THREADS = threads
    finished: list[int] = []

    def send(item: int) -> None:
        if item == 2:
            raise OSError("the store went away")
        finished.append(item)

    done, error = objects_each(send, range(5))

    assert isinstance(error, OSError) and "went away" in str(error)
    assert 2 not in done and sorted(done) == sorted(finished)
    # One at a time, the requests after the failed one are not sent.
    assert sorted(done) == ([0, 1] if threads == 1 else [0, 1, 3, 4])
