"""Parallel runs (pytest-xdist; scripts/test.sh's TEST_WORKERS): each worker has
services of its own (mlrbench_site/settings/test.py), and so do the processes its
tests start; a test marked `serial` runs with no other beside it
(tests/support/serial.py); the tests of an `xdist_group` run on one worker; a test
marked `slow` runs only when asked for (tests/support/slow.py). Checked in runs of
pytest of their own, on tests written here that touch no service."""

import json
import os
import subprocess
import sys

import pytest

from mlrbench_site.settings.test import xdist_worker_environment
from tests.conftest import PROJECT_ROOT

PROBES = '''
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

OUT = Path(os.environ["PROBE_OUT"])
CHILD = (
    "import django, json; django.setup(); from django.conf import settings; "
    "print(json.dumps([settings.REDIS_URL, settings.SANDBOX_UID_BASE]))"
)


def _seen() -> dict:
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
    ).stdout
    return {
        "redis": settings.REDIS_URL,
        "cache": settings.CACHES["default"]["LOCATION"],
        "broker": settings.CELERY_BROKER_URL,
        "uid_base": settings.SANDBOX_UID_BASE,
        "work_root": str(settings.EXPERIMENT_WORK_ROOT),
        "child": json.loads(child.strip().splitlines()[-1]),
    }


def _span(name: str) -> None:
    """The test's start and end (CLOCK_MONOTONIC, one clock for every process),
    with a little work between."""
    started = time.monotonic()
    time.sleep(0.3)
    (OUT / f"span-{name}.json").write_text(json.dumps([started, time.monotonic()]))


@pytest.mark.parametrize("n", range(6))
def test_plain(n):
    seen = OUT / f"settings-{os.environ['PYTEST_XDIST_WORKER']}.json"
    if not seen.exists():  # once per worker: a child process is a second's start
        seen.write_text(json.dumps(_seen()))
    _span(f"plain-{n}")


@pytest.mark.serial
@pytest.mark.parametrize("n", range(2))
def test_alone(n):
    _span(f"serial-{n}")


@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("n", range(4))
def test_grouped(n):
    (OUT / f"grouped-{n}.txt").write_text(os.environ["PYTEST_XDIST_WORKER"])
'''


def _pytest_of_its_own(
    tmp_path,
    *options: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    returncode: int = 0,
) -> str:
    """pytest on the probes written in `tmp_path`, without the suite's conftest or
    configuration: its output, once it ended with `returncode` (passed)."""
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
            "--rootdir", str(tmp_path), *options, str(tmp_path),
        ],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == returncode, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_workers_services_are_its_own():
    current = {
        "REDIS_URL": "redis://127.0.0.1:6379/15",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15",
        "SANDBOX_UID_BASE": "61000",
        "SANDBOX_MAX_JOBS": "16",
        "EXPERIMENT_WORK_ROOT": "/tmp/work",
    }
    assert xdist_worker_environment(current, "gw2") == {
        "MLRBENCH_TEST_WORKER": "gw2",
        "REDIS_URL": "redis://127.0.0.1:6379/13",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/13",
        "SANDBOX_UID_BASE": str(61000 + 3 * 16),
        "EXPERIMENT_WORK_ROOT": "/tmp/work-gw2",
    }
    rabbit = {**current, "CELERY_BROKER_URL": "amqp://guest:guest@127.0.0.1:5672/run-7"}
    changed = xdist_worker_environment(rabbit, "gw1")
    assert changed["CELERY_BROKER_URL"] == "amqp://guest:guest@127.0.0.1:5672/run-7-gw1"
    assert changed["REDIS_URL"] == "redis://127.0.0.1:6379/14"
    with pytest.raises(RuntimeError, match="Redis database 1 leaves no database -1"):
        xdist_worker_environment({**current, "REDIS_URL": "redis://127.0.0.1:6379/1"}, "gw2")


def test_a_parallel_run_gives_each_worker_its_own_services_and_runs_serial_tests_alone(
    tmp_path,
):
    (tmp_path / "test_probes.py").write_text(PROBES)
    out = tmp_path / "out"
    out.mkdir()
    # A run of its own, on the settings the suite's processes read, with
    # none of this worker's own changes (this very test may run in one).
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "MLRBENCH_TEST_WORKER"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="mlrbench_site.settings.test",
        REDIS_URL="redis://127.0.0.1:6379/9",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/9",
        SANDBOX_UID_BASE="61000",
        SANDBOX_MAX_JOBS="16",
        EXPERIMENT_WORK_ROOT=str(tmp_path / "work"),
        PROBE_OUT=str(out),
    )
    shown = _pytest_of_its_own(
        tmp_path,
        # As scripts/test.sh runs the suite.
        "-p", "tests.support.serial", "-n", "2", "--dist", "loadgroup",
        "--basetemp", str(tmp_path / "basetemp"),
        env=env,
        timeout=600,
    )  # fmt: skip

    seen = {
        path.stem.removeprefix("settings-"): json.loads(path.read_text())
        for path in out.glob("settings-*.json")
    }
    assert set(seen) == {"gw0", "gw1"}, shown  # six tests: both workers took some
    for worker, database, uid_base in (("gw0", 9, 61016), ("gw1", 8, 61032)):
        url = f"redis://127.0.0.1:6379/{database}"
        assert seen[worker] == {
            "redis": url,
            "cache": url,
            "broker": url,
            "uid_base": uid_base,
            "work_root": f"{tmp_path / 'work'}-{worker}",
            # A process a test starts inherits the worker's services, moved once.
            "child": [url, uid_base],
        }

    # The tests of an xdist_group ran on one worker (a session fixture they share,
    # such as a task environment, is built once).
    grouped = {path.name: path.read_text() for path in out.glob("grouped-*.txt")}
    assert len(grouped) == 4 and len(set(grouped.values())) == 1, grouped

    spans = {
        path.stem.removeprefix("span-"): json.loads(path.read_text())
        for path in out.glob("span-*.json")
    }
    assert len(spans) == 8
    for name, (start, end) in spans.items():
        if not name.startswith("serial-"):
            continue
        beside = [
            other
            for other, (other_start, other_end) in spans.items()
            if other != name and other_start < end and start < other_end
        ]
        assert beside == [], f"{name} ran beside {beside}"


SLOW_PROBES = """
import pytest


@pytest.mark.slow
def test_heavy_variant():
    pass


def test_the_rule():
    pass
"""


@pytest.mark.parametrize(
    ("marks", "outcome"),
    [((), "1 passed, 1 skipped"), (("-m", "slow"), "1 passed, 1 deselected")],
    ids=["by-default", "asked-for"],
)
def test_a_slow_test_runs_only_when_a_marker_expression_names_it(tmp_path, marks, outcome):
    """The README's test command and CI skip `slow` tests (tests/support/slow.py)."""
    (tmp_path / "test_slow_probes.py").write_text(SLOW_PROBES)
    shown = _pytest_of_its_own(
        tmp_path,
        "-p", "no:django", "-p", "tests.support.slow",
        "-W", "ignore::pytest.PytestUnknownMarkWarning", *marks,
    )  # fmt: skip
    assert outcome in shown, shown


GROUP_PROBES = """
import pytest


@pytest.mark.xdist_group("environment")
@pytest.mark.django_db
def test_builds():
    pass


@pytest.mark.xdist_group("environment")
@pytest.mark.django_db(transaction=True)
def test_runs_on_a_worker():
    pass
"""


def test_an_xdist_group_of_transactional_tests_and_others_is_refused(tmp_path):
    """Its flush would run among the other kind on its worker (tests/support/groups.py)."""
    (tmp_path / "test_group_probes.py").write_text(GROUP_PROBES)
    shown = _pytest_of_its_own(
        tmp_path,
        "-p", "no:django", "-p", "tests.support.groups", "--collect-only",
        "-W", "ignore::pytest.PytestUnknownMarkWarning",
        returncode=pytest.ExitCode.USAGE_ERROR,
    )  # fmt: skip
    assert "an xdist_group holds transactional tests" in shown, shown
    assert "test_runs_on_a_worker" in shown and "test_builds'" not in shown, shown


def test_ci_smoke_slots_get_services_of_their_own_as_test_workers_do():
    """`.ci/run` runs two perf smoke scripts at once: each slot has its own Redis
    database, work root and sandbox uids (a job's end sweeps every process of its
    slot's uid), by the test workers' rule (scripts/slot_environment.py)."""
    env = {
        **os.environ,
        "REDIS_URL": "redis://127.0.0.1:6379/15",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15",
        "SANDBOX_UID_BASE": "61000",
        "SANDBOX_MAX_JOBS": "16",
        "EXPERIMENT_WORK_ROOT": "/tmp/work",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("MLRBENCH_TEST_WORKER", None)
    slots = []
    for slot in (0, 1):
        exported = subprocess.run(
            [sys.executable, "scripts/slot_environment.py", str(slot)],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
        slots.append(
            dict(line.removeprefix("export ").split("=", 1) for line in exported.splitlines())
        )
    assert slots == [
        {
            "REDIS_URL": f"redis://127.0.0.1:6379/{15 - slot}",
            "CELERY_BROKER_URL": f"redis://127.0.0.1:6379/{15 - slot}",
            "SANDBOX_UID_BASE": str(61000 + (slot + 1) * 16),
            "EXPERIMENT_WORK_ROOT": f"/tmp/work-gw{slot}",
        }
        for slot in (0, 1)
    ]
