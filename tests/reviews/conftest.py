import pytest

from benchmark.roles import organiser_grant
from reviews.services import reviewer_register
from tests.benchmark.factories import UserFactory
from tests.judging.factories import RubricFactory


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def rubric(db):
    return RubricFactory()


@pytest.fixture
def make_reviewer(db):
    def make(username: str | None = None, **profile):
        user = UserFactory(**({"username": username} if username else {}))
        reviewer_register(user=user, **profile)
        return user

    return make


@pytest.fixture
def organiser(db):
    user = UserFactory(username="organiser")
    organiser_grant(user=user)
    return user
