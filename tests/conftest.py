"""Fixtures shared by the whole suite.

The suite runs against the services named by the environment (see
scripts/test.sh): PostgreSQL through DATABASE_URL and Redis through REDIS_URL.
"""

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache

PROJECT_ROOT = Path(__file__).resolve().parent.parent


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
