"""The test suite's settings (pytest's `DJANGO_SETTINGS_MODULE`, pyproject.toml):
the site's own (`mlrbench_site.settings`, read from the environment as always;
`scripts/test.sh` points it at PostgreSQL and Redis), with only what a test run
needs changed. Every process a test starts (a worker, a command) inherits
`DJANGO_SETTINGS_MODULE` from pytest, and so these settings; a test that means
to check the production settings names `mlrbench_site.settings` itself.

Per-test settings (a test's own `settings` fixture, or tests/conftest.py's
autouse fixtures, such as the boards computed by readers) stay with the tests:
only the test process has them, never the workers a test starts.
"""

import os
import urllib.parse
from collections.abc import Mapping
from pathlib import Path

from mlrbench_site.settings import *  # noqa: F403
from mlrbench_site.settings import (  # noqa: F401 - upper case, so a setting too
    _DEFAULT_STORAGE,
    CACHES,
    CELERY_BROKER_URL,
    EXPERIMENT_WORK_ROOT,
    REDIS_URL,
    SANDBOX_MAX_JOBS,
    SANDBOX_UID_BASE,
)

# Parallel runs (pytest-xdist, `scripts/test.sh` with TEST_WORKERS): each worker
# process of the run (PYTEST_XDIST_WORKER=gw0, gw1, ...) gets services of its own,
# so that no worker flushes, reads or consumes another's. pytest-django suffixes
# its test database (test_mlrbench_gw0, a copy of TEST_DATABASE_TEMPLATE when
# set); the rest is changed here, in these settings and in the environment, which
# every process a test starts (a Celery worker, a command) inherits:
#
# - Redis: database N - K for worker gwK, N being REDIS_URL's (15 in
#   scripts/test.sh): the cache's `clear()` in every test is a FLUSHDB, and the
#   broker's queues, the broker-memory marker (common/broker.py), the judges'
#   rate-limit windows and the GPU hosts' announcements live there too;
# - the broker: that same Redis database, or on RabbitMQ the virtual host
#   `<vhost>-gwK` (scripts/test.sh makes one per worker);
# - sandbox uids: a range of SANDBOX_MAX_JOBS of its own (SANDBOX_UID_BASE), so
#   that a test's check that no sandbox process is left sees only its worker's;
# - EXPERIMENT_WORK_ROOT: a folder of its own (the GPU slot locks live there).
#
# Ports are free ones the kernel picks, and media roots are under pytest's
# tmp_path (a folder per worker). MLRBENCH_TEST_WORKER records that the
# environment is a worker's already: a process a test starts, which reads these
# settings too, inherits it and changes nothing again.
_worker_env = "MLRBENCH_TEST_WORKER"


def _redis_database_moved(url: str, offset: int) -> str:
    parts = urllib.parse.urlsplit(url)
    path = parts.path.strip("/")
    database = int(path) if path.isdigit() else 0
    if database - offset < 0:
        raise RuntimeError(
            f"{url}: Redis database {database} leaves no database {database - offset} for "
            f"pytest-xdist worker {offset}; point REDIS_URL at a higher database "
            "(scripts/test.sh uses 15) or run fewer workers"
        )
    return parts._replace(path=f"/{database - offset}").geturl()


def _amqp_vhost_moved(url: str, worker: str) -> str:
    parts = urllib.parse.urlsplit(url)
    vhost = urllib.parse.unquote(parts.path[1:]) or "/"
    return parts._replace(path="/" + urllib.parse.quote(f"{vhost}-{worker}", safe="")).geturl()


def xdist_worker_environment(current: Mapping[str, str], worker: str) -> dict[str, str]:
    """What pytest-xdist's worker `worker` (gw0, gw1, ...) changes, from the
    `current` values of REDIS_URL, CELERY_BROKER_URL, SANDBOX_UID_BASE,
    SANDBOX_MAX_JOBS and EXPERIMENT_WORK_ROOT."""
    offset = int(worker.removeprefix("gw"))
    changed = {_worker_env: worker}
    redis_url, broker_url = current["REDIS_URL"], current["CELERY_BROKER_URL"]
    if redis_url:
        changed["REDIS_URL"] = _redis_database_moved(redis_url, offset)
    if broker_url.startswith(("redis://", "rediss://")):
        changed["CELERY_BROKER_URL"] = _redis_database_moved(broker_url, offset)
    elif broker_url.startswith(("amqp://", "amqps://", "pyamqp://")):
        changed["CELERY_BROKER_URL"] = _amqp_vhost_moved(broker_url, worker)
    jobs = int(current["SANDBOX_MAX_JOBS"])
    changed["SANDBOX_UID_BASE"] = str(int(current["SANDBOX_UID_BASE"]) + (offset + 1) * jobs)
    changed["EXPERIMENT_WORK_ROOT"] = f"{current['EXPERIMENT_WORK_ROOT']}-{worker}"
    return changed


def services_now() -> dict[str, str]:
    """The values xdist_worker_environment moves, as these settings read them."""
    return {
        "REDIS_URL": REDIS_URL,
        "CELERY_BROKER_URL": CELERY_BROKER_URL,
        "SANDBOX_UID_BASE": str(SANDBOX_UID_BASE),
        "SANDBOX_MAX_JOBS": str(SANDBOX_MAX_JOBS),
        "EXPERIMENT_WORK_ROOT": str(EXPERIMENT_WORK_ROOT),
    }


_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("MLRBENCH_TEST_WORKER") != _worker:
    _changed = xdist_worker_environment(services_now(), _worker)
    os.environ.update(_changed)
    REDIS_URL = _changed.get("REDIS_URL", REDIS_URL)
    if REDIS_URL:
        CACHES = {"default": {**CACHES["default"], "LOCATION": REDIS_URL}}
    CELERY_BROKER_URL = _changed.get("CELERY_BROKER_URL", CELERY_BROKER_URL)
    SANDBOX_UID_BASE = int(_changed["SANDBOX_UID_BASE"])
    EXPERIMENT_WORK_ROOT = Path(_changed["EXPERIMENT_WORK_ROOT"])

# Test accounts need no slow password hashing.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The suite's judges and agent runs call the loopback fake model server
# (tests/support/fake_llm.py) with test key variables (TEST_JUDGE_KEY, ...): those
# names are allowed, and any allowed key may go to loopback. The tests of the key
# policy itself (tests/common/test_llm_policy.py) set the production defaults.
LLM_KEY_ENV_ALLOW = [*(LLM_KEY_ENV_ALLOW or ["*_API_KEY"]), "TEST_*_KEY"]  # noqa: F405
LLM_KEY_HOSTS = {**LLM_KEY_HOSTS, "*": ["127.0.0.1", "localhost", "::1"]}  # noqa: F405
