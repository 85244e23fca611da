"""Stepwise runs: one stage, its inputs drawn with the seed from other agents'
submissions of the previous stage (or given by id), recorded as `based_on`."""

import pytest

from agent_runs.models import AgentRun, RunStatus
from agent_runs.services import agent_run_create
from common.errors import ValidationFailed
from mlrbench_site.celery import app
from submissions.intake import submission_intake
from tests.benchmark.factories import AgentFactory

from .conftest import run_options
from .scripted_agent import scripted_agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ideas(task, tmp_path):
    """Five idea submissions by five other agents, each with its own idea.md."""
    stored = []
    for n in range(5):
        path = tmp_path / f"idea-{n}.md"
        path.write_text(f"# Idea number {n}\n\nA distinct idea, marked IDEA-{n}.\n")
        stored.append(
            submission_intake(
                agent=AgentFactory(name=f"idea-agent-{n}"),
                task=task,
                stage="idea",
                archive=path,
                archive_name=path.name,
                uploader=None,
                source="api",
            )
        )
    return stored


def drawn(server, seed: int, settings) -> list[int]:
    settings.CELERY_TASK_ALWAYS_EAGER = False
    from django.db import transaction

    with transaction.atomic():  # created and rolled back: nothing is sent
        (run,) = agent_run_create(
            **run_options(server, mode="stepwise", stage="proposal", seed=seed)
        )
        transaction.set_rollback(True)
    return run.input_ids


def test_the_same_seed_draws_the_same_inputs_and_seeds_differ(ideas, fake_llm, settings):
    picks = {seed: drawn(fake_llm, seed, settings) for seed in range(6)}

    assert {seed: drawn(fake_llm, seed, settings) for seed in range(6)} == picks
    assert all(len(p) == 1 and p[0] in {s.pk for s in ideas} for p in picks.values())
    assert len({tuple(p) for p in picks.values()}) > 1


def test_a_stepwise_proposal_is_built_on_its_drawn_idea_and_records_it(
    agent_settings, ideas, fake_llm
):
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    agent_settings.CELERY_TASK_ALWAYS_EAGER = True
    fake_llm.default = scripted_agent()
    try:
        (run,) = agent_run_create(
            **run_options(fake_llm, mode="stepwise", stage="proposal", seed=3)
        )
    finally:
        app.conf.task_always_eager = previous
    run.refresh_from_db()

    assert run.status == RunStatus.FINISHED, run.reason
    (source,) = run.input_ids
    submission = run.submission
    assert submission.stage == "proposal"
    assert list(submission.based_on.values_list("pk", flat=True)) == [source]
    number = [s.pk for s in ideas].index(source)
    proposal_prompt = next(r for r in fake_llm.requests if "research proposal" in str(r.messages))
    assert f"IDEA-{number}" in str(proposal_prompt.messages)
    assert list(run.stages.values_list("name", flat=True)) == ["lit", "proposal", "store"]


def test_inputs_are_checked_before_anything_is_queued(ideas, fake_llm):
    with pytest.raises(ValidationFailed, match="no submission 999999") as caught:
        agent_run_create(
            **run_options(fake_llm, mode="stepwise", stage="paper", input_ids=[999999])
        )
    assert caught.value.items[0].field == "input"
    with pytest.raises(ValidationFailed, match="takes no inputs"):
        agent_run_create(
            **run_options(fake_llm, mode="stepwise", stage="idea", input_ids=[ideas[0].pk])
        )
    with pytest.raises(ValidationFailed, match="no ready"):
        agent_run_create(**run_options(fake_llm, mode="stepwise", stage="experiment"))
    assert AgentRun.objects.count() == 0
