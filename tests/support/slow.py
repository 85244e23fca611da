"""The `slow` marker: a heavy variant of a rule that another test checks in every
run (the fault drill's other orders of faults). The README's test command and CI
skip it; a `-m` that names `slow` (`./scripts/test.sh -m slow`) runs it. A plugin
(`-p tests.support.slow`) as well as the suite's conftest, so that a run of
pytest of its own can check it (tests/site/test_parallel_runs.py)."""

from __future__ import annotations

import pytest


def slow_skip(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow_skip(config, items)
