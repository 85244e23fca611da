"""Fixtures shared by the whole suite.

The suite runs against the services named by the environment (see
scripts/test.sh): PostgreSQL through DATABASE_URL and Redis through REDIS_URL.
"""

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache

from tests.s3_server import S3Server

S3_BACKEND = "storages.backends.s3.S3Storage"

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _boards_computed_by_readers(settings):
    # Most tests write with no worker consuming the judge queue, so nobody would
    # bring a stale board up to date: readers compute, as without a broker.
    # tests/leaderboard/test_refresh.py turns the background refresh on.
    settings.LEADERBOARD_STALE_SECONDS = 0


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


def _database_url_for(db_settings: dict) -> str:
    """The URL of the database Django is using now (the test database)."""
    engine = db_settings["ENGINE"]
    if engine.endswith("sqlite3"):
        return f"sqlite:///{db_settings['NAME']}"
    user = db_settings.get("USER") or ""
    password = f":{db_settings['PASSWORD']}" if db_settings.get("PASSWORD") else ""
    host = db_settings.get("HOST") or "127.0.0.1"
    port = db_settings.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db_settings['NAME']}"


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
    import os
    import signal
    import subprocess
    import sys
    import time
    import uuid

    from django.db import connection

    from mlrbench_site.celery import app

    if not settings.CELERY_BROKER_URL:
        pytest.fail("the Celery tests need REDIS_URL / CELERY_BROKER_URL (see scripts/test.sh)")
    started: list[subprocess.Popen] = []
    database_url = _database_url_for(connection.settings_dict)

    def start(
        queues: str = "judge",
        *,
        pool: str = "prefork",
        concurrency: int = 1,
        env: dict[str, str] | None = None,
        extra_args: list[str] | None = None,
    ) -> subprocess.Popen:
        node = f"test-{uuid.uuid4().hex[:8]}@%h"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "mlrbench_site",
                "worker",
                "-Q",
                queues,
                "--pool",
                pool,
                "--concurrency",
                str(concurrency),
                "-n",
                node,
                "--without-mingle",
                "--without-gossip",
                "--loglevel",
                "INFO",
                *(extra_args or []),
            ],
            cwd=PROJECT_ROOT,
            env={
                **os.environ,
                "DATABASE_URL": database_url,
                "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
                "REDIS_URL": settings.REDIS_URL,
                "LEADERBOARD_STALE_SECONDS": str(settings.LEADERBOARD_STALE_SECONDS),
                **(env or {}),
            },
            start_new_session=True,
        )
        started.append(process)
        hostname = node.replace("%h", socket.gethostname())
        process.node = hostname  # type: ignore[attr-defined]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"the Celery worker exited with {process.returncode}")
            if app.control.ping(destination=[hostname], timeout=0.5):
                return process
        pytest.fail("the Celery worker did not answer within 60 s")

    # Leftover messages from an earlier test must not reach this test's worker
    # (declared first: RabbitMQ refuses to purge a queue it does not have yet).
    with app.connection_for_write() as conn:
        for queue in app.amqp.queues.values():
            queue(conn.default_channel).declare()
            queue(conn.default_channel).purge()
    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in started:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
