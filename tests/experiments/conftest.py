"""Experiment fixtures: a work root the sandbox user can enter, small limits,
and the same settings for a real Celery worker process."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from sandbox import sandbox_problem

# MLRC-Bench's product-recommendation task folder, as MLRC-Bench publishes it.
PUBLISHED = Path(os.environ.get("MLRC_DATA", "/work/shared/mlrc")) / "product-recommendation"

SMALL_LIMITS = {
    "SANDBOX_MEMORY_BYTES": 384 * 1024 * 1024,
    "SANDBOX_PROCESSES": 48,
    "SANDBOX_DISK_BYTES": 16 * 1024 * 1024,
    "EXPERIMENT_TIME_LIMIT_SECONDS": 60,
}


@pytest.fixture(scope="session")
def sandbox_ready() -> None:
    problem = sandbox_problem()
    if problem:
        pytest.fail(f"the sandbox cannot run here: {problem} (.ci/run installs bubblewrap)")


@pytest.fixture
def experiment_root():
    # Under /tmp, not pytest's tmp_path: the sandbox user must be able to enter it.
    root = Path(tempfile.mkdtemp(prefix="mlrbench-test-", dir="/tmp"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def experiment_settings(settings, experiment_root, tmp_path, sandbox_ready):
    """Settings for experiment tests; `worker_env` gives the same to a Celery worker."""
    settings.EXPERIMENT_WORK_ROOT = experiment_root / "work"
    settings.EXPERIMENT_DATA_ROOT = experiment_root / "objective"
    settings.MEDIA_ROOT = tmp_path / "media"
    for name, value in SMALL_LIMITS.items():
        setattr(settings, name, value)
    settings.worker_env = {
        "EXPERIMENT_WORK_ROOT": str(settings.EXPERIMENT_WORK_ROOT),
        "EXPERIMENT_DATA_ROOT": str(settings.EXPERIMENT_DATA_ROOT),
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        **{name: str(value) for name, value in SMALL_LIMITS.items()},
    }
    return settings


@pytest.fixture(scope="session")
def env_root():
    """One environment folder for the session: built once, adopted by every test
    (each has its own database) through the build's marker. Here, not in a test
    module: a module that imported it would have a session fixture of its own."""
    root = Path(tempfile.mkdtemp(prefix="mlrbench-test-envs-", dir="/tmp"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def published(experiment_settings, env_root):
    """Settings for the published product-recommendation task, its environment
    in the session's folder."""
    if not (PUBLISHED / "env" / "main.py").is_file():
        pytest.fail(f"the published task folder is not at {PUBLISHED} (see shared/mlrc/README.md)")
    worker_env = {**experiment_settings.worker_env, "TASK_ENV_ROOT": str(env_root)}
    experiment_settings.TASK_ENV_ROOT = env_root
    experiment_settings.worker_env = worker_env
    return experiment_settings
