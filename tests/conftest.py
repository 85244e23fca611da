"""Fixtures shared by the whole suite.

The suite runs against the services named by the environment (see
scripts/test.sh): PostgreSQL through DATABASE_URL and Redis through REDIS_URL.
"""

import io
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache

from tests.support.fake_llm import FakeLLMServer
from tests.support.flush import flush_tables_with_rows_only
from tests.support.groups import groups_check
from tests.support.s3_server import S3Server
from tests.support.serial import _alone_when_serial  # noqa: F401 - an autouse fixture
from tests.support.slow import slow_skip
from tests.support.workers import (
    WorkerStartError,
    database_url,
    processes_stop,
    queues_purge,
    worker_command,
    worker_start,
    workers_wait_ready,
)

S3_BACKEND = "storages.backends.s3.S3Storage"

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _boards_computed_by_readers(settings):
    # Most tests write with no worker consuming the judge queue, so nobody would
    # bring a stale board up to date: readers compute, as without a broker.
    # tests/leaderboard/test_refresh.py turns the background refresh on.
    settings.LEADERBOARD_STALE_SECONDS = 0


@pytest.fixture(scope="session", autouse=True)
def _flush_tables_with_rows_only() -> Iterator[None]:
    # A transactional test's flush truncates only the tables it wrote to
    # (tests/support/flush.py): a third of a second less for each.
    flush_tables_with_rows_only()
    yield
    flush_tables_with_rows_only(enabled=False)


@pytest.fixture(scope="session")
def mlrbench_data() -> Path:
    path = Path(settings.MLRBENCH_DATA)
    if not (path / "tasks").is_dir():
        pytest.fail(f"MLRBENCH_DATA={path} has no tasks/ folder; point it at the MLR-Bench data.")
    return path


@pytest.fixture(autouse=True)
def _clear_cache():
    # The cache is Redis in the suite: keep tests from seeing each other's entries.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(scope="session")
def s3_server():
    """The suite's loopback S3 server (moto), started once, on first use."""
    with S3Server() as server:
        yield server


@pytest.fixture(scope="session")
def _s3_suite_storage(request):
    """A suite run with STORAGE_BACKEND=s3 and no AWS_S3_ENDPOINT_URL starts its
    own loopback S3 server, so the whole suite runs against S3; with an
    endpoint (say a MinIO) it uses that one."""
    if settings.STORAGE_BACKEND != "s3" or settings.AWS_S3_ENDPOINT_URL:
        return None
    server = request.getfixturevalue("s3_server")
    # Worker processes the tests start inherit the environment.
    os.environ.update(server.env())
    for name, value in server.env().items():
        setattr(settings, name, value)
    return server


def _storage_prefix_use(settings, monkeypatch, prefix: str) -> None:
    """Every object of this test under its own prefix: a clean bucket per test."""
    settings.AWS_LOCATION = prefix
    monkeypatch.setenv("AWS_LOCATION", prefix)
    # Assigning STORAGES makes Django build the default storage again.
    settings.STORAGES = {**settings.STORAGES, "default": {"BACKEND": S3_BACKEND}}


@pytest.fixture(autouse=True)
def media_root(tmp_path, settings, monkeypatch, _s3_suite_storage) -> Path:
    """A fresh, empty artifact store for every test: imports and uploads
    never write into the project's own media/ folder (nor, on S3, see
    another test's objects)."""
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = root
    if settings.STORAGE_BACKEND == "s3":
        _storage_prefix_use(settings, monkeypatch, f"tests/{uuid.uuid4().hex}")
    return root


class Store:
    """The default storage as a test sees it, whichever backend it is."""

    def names(self, under: str = "") -> list[str]:
        from common.storage import objects_under

        return sorted(objects_under(under))

    def read(self, name: str) -> bytes:
        from common.storage import object_read

        return object_read(name)

    def exists(self, name: str) -> bool:
        from django.core.files.storage import default_storage

        return default_storage.exists(name)


@pytest.fixture
def store(media_root) -> Store:
    """This test's artifact store (empty at its start)."""
    return Store()


@dataclass
class S3Storage:
    server: S3Server
    prefix: str

    def keys(self, under: str = "") -> list[str]:
        """The keys of this test's objects, relative to its prefix."""
        start = f"{self.prefix}/"
        return [key.removeprefix(start) for key in self.server.keys(start + under)]


@pytest.fixture
def s3_storage(settings, monkeypatch, s3_server) -> S3Storage:
    """The default storage on the loopback S3 server for this test (and for the
    worker processes it starts), whatever the suite's STORAGE_BACKEND."""
    for name, value in s3_server.env().items():
        setattr(settings, name, value)
        monkeypatch.setenv(name, value)
    prefix = f"tests/{uuid.uuid4().hex}"
    _storage_prefix_use(settings, monkeypatch, prefix)
    return S3Storage(server=s3_server, prefix=prefix)


@pytest.fixture
def fake_llm() -> Iterator[FakeLLMServer]:
    """The loopback OpenAI-compatible server (tests/support/fake_llm.py), for
    this test alone: scripted per test, every request recorded."""
    server = FakeLLMServer()
    yield server
    server.close()


@pytest.fixture
def production_policy(settings):
    """The LLM key and address policy's production defaults (common/llm_policy.py;
    the test settings let test keys reach loopback): the judges', agent runs' and
    policy's own tests of issue 40's "provider keys leave" and "SSRF"."""
    settings.LLM_KEY_ENV_ALLOW = []
    settings.AGENT_RUN_KEY_ENV_ALLOW = []
    settings.LLM_KEY_HOSTS = {}
    settings.LLM_API_BASE_ALLOWED_HOSTS = []
    return settings


@pytest.fixture
def rates(settings):
    """`rates(public_api="3/minute", ...)`: those throttle rates for this test, the
    others as the settings have them."""

    def set_rates(**rates: str):
        settings.REST_FRAMEWORK = {
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {
                **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
                **rates,
            },
        }

    return set_rates


@pytest.fixture
def write_task_file(tmp_path: Path) -> Callable[..., Path]:
    """Write `<slug>.md` into a fresh folder and return its path."""
    folder = tmp_path / "tasks"
    folder.mkdir()

    def write(name: str, content: str | bytes) -> Path:
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    write.folder = folder  # type: ignore[attr-defined]
    return write


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening on it."""
    return free_port()


@pytest.fixture
def celery_worker_process(transactional_db, settings):
    """Start real Celery worker processes on the suite's broker (Redis or
    RabbitMQ, scripts/test.sh) and test database.

    Call the returned function with the queues (and optionally pool,
    concurrency, extra environment); it waits until the worker answers a ping
    and returns the `subprocess.Popen` (its `node` is the worker's name).
    All workers stop at the end of the test.
    Tests that use it must commit their rows (this fixture implies
    `transactional_db`), since the worker reads them from another connection.
    """
    import subprocess

    from django.db import connection

    from mlrbench_site.celery import app

    if not settings.CELERY_BROKER_URL:
        pytest.fail("the Celery tests need REDIS_URL / CELERY_BROKER_URL (see scripts/test.sh)")
    started: list[subprocess.Popen] = []
    db_url = database_url(connection.settings_dict)

    def start(
        queues: str = "judge",
        *,
        pool: str = "prefork",
        concurrency: int = 1,
        env: dict[str, str] | None = None,
        extra_args: list[str] | None = None,
    ) -> subprocess.Popen:
        node = f"test-{uuid.uuid4().hex[:8]}@%h"
        command = worker_command(
            queues, node=node, pool=pool, concurrency=concurrency, extra_args=extra_args or ()
        )
        process = worker_start(
            command,
            {
                **os.environ,
                "DATABASE_URL": db_url,
                "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
                "REDIS_URL": settings.REDIS_URL,
                "LEADERBOARD_STALE_SECONDS": str(settings.LEADERBOARD_STALE_SECONDS),
                **(env or {}),
            },
        )
        started.append(process)
        hostname = node.replace("%h", socket.gethostname())
        process.node = hostname  # type: ignore[attr-defined]
        try:
            workers_wait_ready(app, [process], [hostname], timeout=60, ping_timeout=0.5)
        except WorkerStartError as error:
            pytest.fail(str(error))
        return process

    # Leftover messages from an earlier test must not reach this test's worker.
    queues_purge(app)
    yield start
    processes_stop(started, timeout=20)


# CI's second leg (S3 storage, RabbitMQ) runs only the tests marked `backends`
# (.ci/run); a test that uses one of these fixtures touches storage objects, the
# broker or worker processes and must carry the marker, or that leg never runs
# it (tests/test_backends_marker.py checks).
BACKEND_FIXTURES = frozenset({"celery_worker_process", "s3_storage", "s3_server", "store"})
UNMARKED_BACKEND_TESTS = pytest.StashKey[dict[str, list[str]]]()
AUDIT_ENV = "MLRBENCH_BACKENDS_AUDIT"


def unmarked_backend_tests(items: list[pytest.Item]) -> dict[str, list[str]]:
    """Each collected test that uses a backend fixture but is not marked `backends`,
    with the fixtures it uses."""
    found = {}
    for item in items:
        used = sorted(BACKEND_FIXTURES.intersection(getattr(item, "fixturenames", ())))
        if used and item.get_closest_marker("backends") is None:
            found[item.nodeid] = used
    return found


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # First, before `-m` deselects anything: the audit sees every collected test.
    found = unmarked_backend_tests(items)
    config.stash[UNMARKED_BACKEND_TESTS] = found
    if os.environ.get(AUDIT_ENV):
        import json

        Path(os.environ[AUDIT_ENV]).write_text(
            json.dumps({"collected": len(items), "unmarked": found})
        )
    slow_skip(config, items)
    groups_check(items)


# The MLR-Bench sample, imported once per session. Tests that only read it run
# against a database that holds it (a copy of the test database, imported
# into once), each inside its own transaction as usual, so what a test writes
# is rolled back; a transactional test (a live server, a worker) gets a copy of
# that database of its own, dropped at its end.


@dataclass(frozen=True)
class Sample:
    """The imported sample: its database's name, its artifact store (a folder, or
    on S3 a prefix) and the folder it was imported from."""

    database: str
    media_root: Path
    storage_prefix: str
    path: Path


def _database_copy(source: str, target: str) -> None:
    """CREATE DATABASE target from source (PostgreSQL's template copy)."""
    from django.db import connection

    quote = connection.ops.quote_name
    connection.close()
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quote(target)} WITH (FORCE)")
        # A template must have no other session: an earlier test's worker or
        # live-server thread may have left one behind.
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            [source],
        )
        cursor.execute(f"CREATE DATABASE {quote(target)} TEMPLATE {quote(source)}")


def _database_drop(name: str) -> None:
    from django.db import connection

    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)} WITH (FORCE)")


@contextmanager
def _database_used(name: str) -> Iterator[None]:
    """The default connection (and every connection opened meanwhile, a live
    server's too: they share its settings) on the database `name`."""
    from django.db import connection

    previous = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = previous


def _storage_settings(media: Path, prefix: str) -> dict:
    if settings.STORAGE_BACKEND != "s3":
        return {"MEDIA_ROOT": media}
    return {
        "AWS_LOCATION": prefix,
        "STORAGES": {**settings.STORAGES, "default": {"BACKEND": S3_BACKEND}},
    }


@pytest.fixture(scope="session")
def sample_database(
    django_db_setup, django_db_blocker, tmp_path_factory, mlrbench_data, _s3_suite_storage
) -> Iterator[Sample]:
    """`import_mlrbench` of the sample, once per session, into a copy of the test
    database; as in a test, the tasks the import queues after commit are dropped."""
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test.utils import override_settings

    if connection.vendor != "postgresql":
        pytest.fail("the shared sample database needs PostgreSQL (scripts/test.sh)")
    test_database = connection.settings_dict["NAME"]
    sample = Sample(
        database=f"{test_database}_sample",
        media_root=tmp_path_factory.mktemp("sample-media"),
        storage_prefix=f"tests/sample-{uuid.uuid4().hex}",
        path=mlrbench_data,
    )
    storage = _storage_settings(sample.media_root, sample.storage_prefix)
    with django_db_blocker.unblock():
        _database_copy(test_database, sample.database)
        with (
            _database_used(sample.database),
            override_settings(LEADERBOARD_STALE_SECONDS=0, **storage),
            transaction.atomic(),
        ):
            out = io.StringIO()
            call_command("import_mlrbench", str(mlrbench_data), stdout=out, stderr=out)
            connection.run_on_commit = []
    yield sample
    with django_db_blocker.unblock():
        _database_drop(sample.database)


@pytest.fixture(scope="class")
def _on_sample_database(request, sample_database: Sample, django_db_blocker) -> Iterator[Sample]:
    # Class-scoped so that pytest sets it up before the test's transaction opens
    # (a test outside a class gets it for itself alone).
    marker = request.node.get_closest_marker("django_db")
    transactional = bool(marker and marker.kwargs.get("transaction"))
    if not transactional:
        with _database_used(sample_database.database):
            yield sample_database
        return
    # Its rows are committed and flushed at its end: a copy of its own.
    copy = f"{sample_database.database}_{uuid.uuid4().hex[:8]}"
    with django_db_blocker.unblock():
        _database_copy(sample_database.database, copy)
    try:
        with _database_used(copy):
            yield sample_database
    finally:
        with django_db_blocker.unblock():
            _database_drop(copy)


@pytest.fixture
def sample(_on_sample_database: Sample, media_root, settings) -> Sample:
    """The MLR-Bench sample, imported: this test's database and artifact store hold
    it (imported once per session; what the test writes is its own)."""
    for name, value in _storage_settings(
        _on_sample_database.media_root, _on_sample_database.storage_prefix
    ).items():
        setattr(settings, name, value)
    return _on_sample_database


@pytest.fixture
def curve(settings, tmp_path):
    """The site's shipped curve-fitting objective task, installed under this test's
    media and objective data roots."""
    from experiments.shipped import objective_tasks_install

    settings.MEDIA_ROOT = tmp_path / "media"
    settings.EXPERIMENT_DATA_ROOT = tmp_path / "objective"
    (objective,) = objective_tasks_install().objectives
    return objective
