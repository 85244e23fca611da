"""Agent-run fixtures: the loopback model server, a task, small sandbox limits,
and the same settings for real Celery worker processes."""

import pytest

from benchmark.models import Task
from tests.experiments.conftest import (  # noqa: F401 - fixtures
    experiment_root,
    experiment_settings,
    sandbox_ready,
)

TEST_KEY_ENV = "TEST_AGENT_API_KEY"


@pytest.fixture(autouse=True)
def _agent_key(monkeypatch):
    monkeypatch.setenv(TEST_KEY_ENV, "sk-test-agent-key")


@pytest.fixture
def agent_settings(experiment_settings):  # noqa: F811 - the fixture imported above
    # Read before any other setting changes: a later override hides lower-case names.
    worker_env = experiment_settings.worker_env
    experiment_settings.AGENT_RUN_HEARTBEAT_SECONDS = 0.5
    experiment_settings.AGENT_RUN_COMMAND_SECONDS = 30
    experiment_settings.worker_env = {
        **worker_env,
        TEST_KEY_ENV: "sk-test-agent-key",
        "AGENT_RUN_HEARTBEAT_SECONDS": "0.5",
        "AGENT_RUN_COMMAND_SECONDS": "30",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "SECRET_KEY": "test-only-secret-key",
        "DEBUG": "0",
    }
    return experiment_settings


@pytest.fixture
def task(db):
    return Task.objects.create(
        slug="iclr2025_scripted",
        title="A scripted task",
        conference="iclr",
        year=2025,
        description="# A scripted task\n\nMeasure the accuracy of a simple baseline.\n",
    )


def run_options(server, **overrides):
    """agent_run_create's arguments for a run against the loopback server."""
    return {
        "tasks": ["iclr2025_scripted"],
        "agent_name": "mlr-agent-scripted",
        "model": "openai/scripted-model",
        "api_base": server.url,
        "api_key_env": TEST_KEY_ENV,
        **overrides,
    }
