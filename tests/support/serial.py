"""Tests marked `serial` run alone in a parallel run (pytest-xdist), and are
collected last: a plugin (tests/conftest.py's `pytest_plugins`, and `-p
tests.support.serial` in tests/site/test_parallel_runs.py's inner runs)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def _flock(path: Path, operation: int) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, operation)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _alone_when_serial(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """In a parallel run (pytest-xdist), a test marked `serial` runs alone: the
    other workers finish the tests they are running and start no other until it
    is done. The rest share a lock, taken through a turnstile that a waiting
    serial test holds, so that it is never starved. Serially, nothing to do."""
    if not hasattr(request.config, "workerinput"):  # not an xdist worker
        yield
        return
    run = tmp_path_factory.getbasetemp().parent  # the run's, above each worker's own
    turnstile, room = run / "serial-turnstile.lock", run / "serial-room.lock"
    if request.node.get_closest_marker("serial") is not None:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(room, fcntl.LOCK_EX):
            yield
        return
    with _flock(turnstile, fcntl.LOCK_EX):
        pass
    with _flock(room, fcntl.LOCK_SH):
        yield


def serial_last(items: list[pytest.Item]) -> None:
    """Tests marked `serial` last, the rest in their order: the other workers then
    wait for them at the end of a run, where their cores would idle anyway once
    the queue is empty, not mid-run behind the browser walk. Not first: a
    serial test is transactional, and its flush at the end would take the rows
    the migrations made from the tests after it (pytest-django orders those
    before transactional tests for that reason)."""
    items.sort(key=lambda item: item.get_closest_marker("serial") is not None)


# Last: after pytest-django's own ordering by the tests' use of the database.
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    serial_last(items)
