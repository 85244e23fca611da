"""The benchmark app's models: tasks, users, teams and agents."""

from typing import Any

import factory
from django.contrib.auth.models import User

from benchmark.models import Agent, Conference, ModelFamily, Task, TaskKind, Team
from tests.support.model_factory import ModelFactory

# Every factory-made user's password.
PASSWORD = "a-long-test-password"


class TaskFactory(ModelFactory[Task]):
    class Meta:
        model = Task
        django_get_or_create = ("slug",)

    conference = Conference.ICLR
    year = 2025
    slug = factory.Sequence(lambda n: f"iclr2025_generated{n}")
    title = factory.Sequence(lambda n: f"Generated workshop {n}")
    description = factory.LazyAttribute(lambda task: f"# {task.title}\n\nA generated task.")
    kind = TaskKind.OPEN_ENDED


class UserFactory(ModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.org")
    password = factory.django.Password(PASSWORD)


class TeamFactory(ModelFactory[Team]):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Team {n}")
    slug = factory.Sequence(lambda n: f"team-{n}")

    @factory.post_generation
    def members(self, create: bool, extracted: list[User] | None, **kwargs: Any) -> None:
        if create and extracted:
            self.members.add(*extracted)


class AgentFactory(ModelFactory[Agent]):
    """An agent of no known model family, so no judge's family matches it.

    Trait `o4_mini`: the agent runs on OpenAI's o4-mini, which prices the
    steps of its runs (and makes OpenAI judges its own family's)."""

    class Meta:
        model = Agent
        django_get_or_create = ("name",)

    class Params:
        o4_mini = factory.Trait(base_model="o4-mini-2025-04-16", model_family=ModelFamily.OPENAI)

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")
    display_name = factory.LazyAttribute(lambda agent: agent.name.replace("-", " ").title())
    base_model = ""
    model_family = ModelFamily.OTHER
