"""Tests marked `serial` run alone in a parallel run (pytest-xdist): an autouse
fixture, imported by tests/conftest.py (and a plugin of its own, `-p
tests.support.serial`, for tests/site/test_parallel_runs.py's inner runs)."""

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
