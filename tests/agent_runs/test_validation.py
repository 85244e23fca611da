"""Bad input is refused before anything is queued: every problem named with its
field, no run row written, nothing sent to a worker."""

from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from agent_runs.models import AgentRun
from agent_runs.services import agent_run_create
from benchmark.roles import organiser_grant
from common.errors import ValidationFailed
from common.llm_policy import key_env_problem

from .conftest import run_options

pytestmark = pytest.mark.django_db


def refused(**options) -> dict[str | None, str]:
    with pytest.raises(ValidationFailed) as caught:
        agent_run_create(**options)
    assert AgentRun.objects.count() == 0
    return {item.field: item.message for item in caught.value.items}


def test_unknown_model_missing_key_and_unknown_task_are_refused(task, monkeypatch):
    monkeypatch.delenv("NO_SUCH_API_KEY", raising=False)
    problems = refused(
        tasks=["iclr2025_scripted", "no-such-task"],
        agent_name="mlr-agent-x",
        model="no-such-model-anywhere",
        api_key_env="NO_SUCH_API_KEY",
    )
    assert "no task 'no-such-task'" in problems["task"]
    assert "no-such-model-anywhere" in problems["model"]
    assert "NO_SUCH_API_KEY is not set" in problems["api_key_env"]


def test_a_key_given_instead_of_a_variable_name_is_refused(task, fake_llm):
    problems = refused(**run_options(fake_llm, api_key_env="sk-live-123"))
    assert "not an environment variable name" in problems["api_key_env"]


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "HOME"])
def test_no_setting_of_the_site_can_be_sent_as_a_runs_api_key(task, fake_llm, name, monkeypatch):
    """Issue 32, finding 10: a staff member names the site's secret as the
    key of a run whose api_base they choose; refused, whether or not set."""
    monkeypatch.setenv(name, "the-sites-secret")
    problems = refused(**run_options(fake_llm, api_key_env=name))
    assert name in problems["api_key_env"]


def test_the_allow_list_is_the_deployments_and_never_takes_a_site_setting(settings):
    # The former name (AGENT_RUN_KEY_ENV_ALLOW) still works beside LLM_KEY_ENV_ALLOW.
    settings.LLM_KEY_ENV_ALLOW = []
    settings.AGENT_RUN_KEY_ENV_ALLOW = ["PROVIDER_*", "SECRET_*"]
    assert key_env_problem("PROVIDER_TOKEN") is None
    assert "site's own settings" in (key_env_problem("SECRET_KEY") or "")
    assert "LLM_KEY_ENV_ALLOW" in (key_env_problem("OTHER_API_KEY") or "")
    settings.AGENT_RUN_KEY_ENV_ALLOW = []
    assert key_env_problem("OTHER_API_KEY") is None
    assert key_env_problem("DATABASE_URL") is not None
    settings.LLM_KEY_ENV_ALLOW = ["OTHER_*", "AWS_*"]
    assert key_env_problem("OTHER_TOKEN") is None
    assert key_env_problem("AWS_SECRET_ACCESS_KEY") is not None


@pytest.mark.parametrize(
    ("budget", "field"),
    [
        ({"max_steps": 0}, "max_steps"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"max_cost_usd": Decimal("0")}, "max_cost"),
        ({"max_cost_usd": Decimal("-1.5")}, "max_cost"),
    ],
)
def test_budgets_that_are_not_positive_are_refused(task, fake_llm, budget, field):
    assert field in refused(**run_options(fake_llm, **budget))


def test_a_stepwise_run_needs_a_stage_and_an_end2end_run_takes_none(task, fake_llm):
    assert "needs --stage" in refused(**run_options(fake_llm, mode="stepwise"))["stage"]
    assert "stepwise runs only" in refused(**run_options(fake_llm, stage="paper"))["stage"]


def test_a_model_on_an_explicit_server_and_a_known_model_are_accepted(task, fake_llm, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # created, not run: nothing here consumes
    from django.db import transaction

    with transaction.atomic():
        runs = agent_run_create(**run_options(fake_llm, lit_model="gpt-4o-search-preview"))
        transaction.set_rollback(True)  # the chain is sent on commit: never here
    assert [run.lit_model for run in runs] == ["gpt-4o-search-preview"]
    assert runs[0].agent.scaffold == "MLR-Agent"
    assert runs[0].agent.team.slug == "mlr-agent-runs"


def test_run_agent_answers_a_bad_input_with_the_reason_and_queues_nothing(task):
    with pytest.raises(CommandError, match="task: no task 'nope'"):
        call_command(
            "run_agent", "--task", "nope", "--agent", "a", "--model", "gpt-4o", "--max-steps", "3"
        )
    with pytest.raises(CommandError, match="max_steps"):
        call_command(
            "run_agent",
            "--task",
            task.slug,
            "--agent",
            "a",
            "--model",
            "gpt-4o",
            "--max-steps",
            "0",
        )
    assert AgentRun.objects.count() == 0


def test_run_agent_calls_each_model_once_first_and_queues_nothing_it_cannot_reach(
    task, fake_llm, closed_port
):
    from tests.support.fake_llm import error

    fake_llm.script(error(401, "Incorrect API key provided"))
    options = run_options(fake_llm)
    args = ["--task", task.slug, "--agent", options["agent_name"], "--model", options["model"]]
    args += ["--api-key-env", options["api_key_env"], "--no-lit-review"]

    with pytest.raises(CommandError, match="refused the API key"):
        call_command("run_agent", *args, "--api-base", fake_llm.url)
    with pytest.raises(CommandError, match="could not connect"):
        call_command("run_agent", *args, "--api-base", f"http://127.0.0.1:{closed_port}/v1")
    assert AgentRun.objects.count() == 0
    # One small call per distinct model, before anything was written.
    assert len(fake_llm.requests) == 1 and fake_llm.requests[0].body["max_tokens"] == 16


def test_the_new_run_form_checks_the_model_before_queueing(client, task, fake_llm):
    from django.contrib.auth.models import User

    from tests.support.fake_llm import error

    grace = User.objects.create_user("grace", password="pw")
    organiser_grant(user=grace)
    client.force_login(grace)
    fake_llm.script(error(401, "Incorrect API key provided"))
    options = run_options(fake_llm)
    response = client.post(
        "/agent-runs/new/",
        {
            "task": [task.slug],
            "agent": options["agent_name"],
            "model": options["model"],
            "api_base": options["api_base"],
            "api_key_env": options["api_key_env"],
            "no_lit_review": "on",
            "mode": "end2end",
            "max_steps": 10,
            "seed": 0,
        },
    )
    assert response.status_code == 400
    assert "refused the API key" in response.content.decode()
    assert AgentRun.objects.count() == 0


# Issue 40, "provider keys leave" and "SSRF": an agent run named ANTHROPIC_API_KEY
# (the judges' key) with an api_base of its own, and the key arrived there; an
# api_base may point at any address. Refused in the service (and so in the form,
# the API and `run_agent`), with the production policy's defaults (`production_policy`,
# tests/conftest.py).


def test_a_providers_key_is_not_sent_to_a_runs_own_server(
    task, fake_llm, production_policy, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-the-judges-key")
    problems = refused(**run_options(fake_llm, api_key_env="ANTHROPIC_API_KEY"))
    assert "may be sent only to api.anthropic.com" in problems["api_key_env"]
    assert "LLM_KEY_HOSTS" in problems["api_key_env"]
    assert fake_llm.requests == []
    # The deployment's own choice lets it go there.
    production_policy.LLM_KEY_HOSTS = {"ANTHROPIC_API_KEY": ["127.0.0.1"]}
    assert agent_run_create(**run_options(fake_llm, api_key_env="ANTHROPIC_API_KEY"))


def test_a_providers_key_goes_with_that_providers_models_only(task, production_policy, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-the-judges-key")
    problems = refused(
        tasks=["iclr2025_scripted"],
        agent_name="mlr-agent-x",
        model="anthropic/claude-3-7-sonnet-20250219",
        coding_model="openai/gpt-4o-mini",
        api_key_env="ANTHROPIC_API_KEY",
    )
    assert "'openai/gpt-4o-mini' is openai's" in problems["api_key_env"]


@pytest.mark.parametrize(
    "api_base", ["http://169.254.169.254/v1", "http://metadata.google.internal/v1"]
)
def test_a_run_may_not_call_a_metadata_service(task, production_policy, api_base):
    problems = refused(
        tasks=["iclr2025_scripted"], agent_name="mlr-agent-x", model="openai/x", api_base=api_base
    )
    assert "cloud metadata" in problems["api_base"]


def test_a_run_may_not_call_the_sites_own_services(task, production_policy, closed_port):
    production_policy.REDIS_URL = f"redis://127.0.0.1:{closed_port}/0"
    problems = refused(
        tasks=["iclr2025_scripted"],
        agent_name="mlr-agent-x",
        model="openai/x",
        api_base=f"http://localhost:{closed_port}/v1",
    )
    assert "the site's own service (REDIS_URL)" in problems["api_base"]


def test_the_api_and_the_command_answer_the_policys_refusal(
    client, task, fake_llm, production_policy, monkeypatch
):
    from django.urls import reverse

    from benchmark.roles import organiser_grant
    from tests.benchmark.factories import UserFactory

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-the-judges-key")
    organiser = UserFactory(username="organiser")
    organiser_grant(user=organiser)
    client.force_login(organiser)
    answer = client.post(
        reverse("api:agent-run-list"),
        {
            "task": [task.slug],
            "agent": "mlr-agent-x",
            "model": "openai/x",
            "api_base": "http://169.254.169.254/v1",
            "api_key_env": "ANTHROPIC_API_KEY",
        },
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert {(e["field"], e["code"]) for e in answer.json()["errors"]} == {
        ("api_base", "address_not_allowed"),
        ("api_key_env", "key_host_not_allowed"),
    }
    with pytest.raises(CommandError, match="api_key_env: ANTHROPIC_API_KEY may be sent only"):
        call_command(
            "run_agent",
            "--task",
            task.slug,
            "--agent",
            "mlr-agent-x",
            "--model",
            "openai/x",
            "--api-base",
            fake_llm.url,
            "--api-key-env",
            "ANTHROPIC_API_KEY",
        )
    assert AgentRun.objects.count() == 0
    assert fake_llm.requests == []


def test_an_agent_runs_own_validation_applies_the_same_policy(task, production_policy):
    """The model's clean() (what a ModelForm or the admin would call) says what the
    service says, on the same fields."""
    from django.core.exceptions import ValidationError

    from tests.benchmark.factories import AgentFactory

    run = AgentRun(
        task=task,
        agent=AgentFactory(),
        model="openai/x",
        coding_model="openai/x",
        api_base="http://169.254.169.254/v1",
        api_key_env="SECRET_KEY",
    )
    with pytest.raises(ValidationError) as caught:
        run.clean()
    assert set(caught.value.message_dict) == {"api_base", "api_key_env"}
