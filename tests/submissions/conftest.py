"""An uploader with an API token, their agent and the sample task: the API
upload tests' cast."""

import pytest

from benchmark.accounts import api_token_create
from tests.benchmark.factories import AgentFactory, TaskFactory, TeamFactory, UserFactory
from tests.benchmark.runs import SAMPLE_TASK


@pytest.fixture
def owner():
    return UserFactory()


@pytest.fixture
def agent(owner):
    return AgentFactory(name="my-agent", team=TeamFactory(members=[owner]), o4_mini=True)


@pytest.fixture
def task():
    return TaskFactory(slug=SAMPLE_TASK)


@pytest.fixture
def token(owner) -> str:
    return api_token_create(user=owner, name="laptop").key
