"""An `xdist_group` runs as one unit on one worker, at the place of its first
test. pytest-django runs a worker's tests that use the database in a transaction
before its transactional ones (a live server, a worker process), whose flush
empties every table, the rows the migrations made included; a group holding
both kinds would run a flush among the first kind, and a later test on that
worker would find no rubric. So a group holds one kind only: the suite refuses to
run otherwise. A plugin (`-p tests.support.groups`) as well as the suite's
conftest, so that a run of pytest of its own can check it
(tests/site/test_parallel_runs.py)."""

from __future__ import annotations

from collections import defaultdict

import pytest


def _transactional(item: pytest.Item) -> bool:
    # pytest-django's own rule for its order (plugin.py, pytest_collection_modifyitems).
    marker = item.get_closest_marker("django_db")
    if marker and (marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")):
        return True
    return bool({"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ())))


def groups_of_both_kinds(items: list[pytest.Item]) -> dict[str, list[str]]:
    """Each xdist_group that holds transactional tests and others: its transactional tests."""
    kinds: dict[str, dict[bool, list[str]]] = defaultdict(lambda: defaultdict(list))
    for item in items:
        for mark in item.iter_markers("xdist_group"):
            name = mark.args[0] if mark.args else mark.kwargs.get("name", "default")
            kinds[str(name)][_transactional(item)].append(item.nodeid)
    return {name: by_kind[True] for name, by_kind in kinds.items() if len(by_kind) == 2}


def groups_check(items: list[pytest.Item]) -> None:
    mixed = groups_of_both_kinds(items)
    if mixed:
        raise pytest.UsageError(
            "an xdist_group holds transactional tests beside tests that use the database "
            f"in a transaction (tests/support/groups.py says why): {mixed}"
        )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups_check(items)
