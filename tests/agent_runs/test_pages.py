"""The organisers' agent-run pages and API: who may see them, the form (the
service's messages beside the fields, nothing queued on bad input), the run
page with its stages, transcript and cancel button, and the JSON it polls."""

import html
import json
import re

import pytest
from django.urls import reverse

from agent_runs.forms import AgentRunForm
from agent_runs.models import AgentRun, RunStatus, StageName, StageStatus
from agent_runs.serializers import AgentRunCreateSerializer
from agent_runs.services import agent_run_create, agent_run_enqueue
from agent_runs.workspace import TRACE_NAME, Trace, workspace_of
from benchmark.roles import organiser_grant
from mlrbench_site.celery import app
from tests.agent_runs.conftest import TEST_KEY_ENV
from tests.benchmark.factories import TaskFactory, UserFactory
from tests.support.fake_llm import FakeLLMServer, answer

MODEL = "openai/gpt-4o-mini"
API_BASE = "http://127.0.0.1:9/v1"  # never called: these runs are not executed


@pytest.fixture
def organiser(db):
    user = UserFactory(username="organiser")
    organiser_grant(user=user)
    return user


@pytest.fixture
def organiser_client(client, organiser):
    client.force_login(organiser)
    return client


@pytest.fixture
def task(db):
    return TaskFactory(slug="iclr2025_agents", title="Agents workshop")


def _form(**changes):
    data = {
        "task": ["iclr2025_agents"],
        "agent": "mlr-agent-test",
        "model": MODEL,
        "api_base": API_BASE,
        "mode": "end2end",
        "max_steps": "20",
        "seed": "3",
    }
    data.update(changes)
    return data


def _run(task, organiser, **changes):
    arguments = {
        "tasks": [task.slug],
        "agent_name": "mlr-agent-test",
        "model": MODEL,
        "api_base": API_BASE,
        "requested_by": organiser,
        **changes,
    }
    return agent_run_create(**arguments)[0]


def _page_urls(run_id):
    return [
        reverse("agent_runs:run-list"),
        reverse("agent_runs:run-new"),
        reverse("agent_runs:run-detail", args=[run_id]),
        reverse("agent_runs:run-progress", args=[run_id]),
    ]


def test_non_organisers_are_sent_to_sign_in_or_refused(client, task, organiser):
    run = _run(task, organiser)
    for url in _page_urls(run.pk):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    client.force_login(UserFactory(username="member"))
    for url in _page_urls(run.pk):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("agent_runs:run-new"), _form()).status_code == 403
    assert client.post(reverse("agent_runs:run-cancel", args=[run.pk])).status_code == 403
    for method, url in [
        ("post", reverse("api:agent-run-list")),
        ("get", reverse("api:agent-run-detail", args=[run.pk])),
        ("post", reverse("api:agent-run-cancel", args=[run.pk])),
    ]:
        response = getattr(client, method)(url, {}, content_type="application/json")
        assert response.status_code == 403, url
        assert response.json()["errors"][0]["code"] == "permission_denied"
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and AgentRun.objects.count() == 1


def test_the_nav_links_agent_runs_for_organisers_only(client, organiser):
    client.force_login(UserFactory(username="member"))
    assert reverse("agent_runs:run-list") not in client.get("/").content.decode()
    client.force_login(organiser)
    page = client.get("/").content.decode()
    assert f'href="{reverse("agent_runs:run-list")}">Agent runs</a>' in page


def test_bad_input_shows_the_services_messages_and_queues_nothing(
    organiser_client, task, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.delenv("H15_UNSET_API_KEY", raising=False)
    data = _form(
        task=["iclr2025_agents", "no-such-task"],
        agent="Not A Name",
        model="",
        api_key_env="H15_UNSET_API_KEY",
        mode="stepwise",
        max_steps="0",
        max_cost="-1",
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = organiser_client.post(reverse("agent_runs:run-new"), data)
    assert response.status_code == 400
    page = response.content.decode()
    for message in [
        "no task &#x27;no-such-task&#x27; in the catalogue",
        "no model given",
        "the environment variable H15_UNSET_API_KEY is not set",
        "max_steps must be a positive whole number",
        "max_cost must be more than 0 USD",
        "a stepwise run needs --stage",
        "the agent name must be lower-case letters",
        "Nothing was queued",
    ]:
        assert message in page, message
    # Each message beside its field.
    assert 'data-testid="error-max_cost"' in page and 'data-testid="error-task"' in page
    assert AgentRun.objects.count() == 0 and callbacks == []


def test_numbers_the_columns_cannot_hold_are_form_errors(organiser_client, task):
    data = _form(max_steps=str(2**40), max_tokens="many", seed=str(-(2**40)), input="12 x")
    response = organiser_client.post(reverse("agent_runs:run-new"), data)
    assert response.status_code == 400
    page = response.content.decode()
    assert "Ensure this value is less than or equal to 2147483647" in page
    assert "Ensure this value is greater than or equal to -2147483647" in page
    assert "A valid integer is required." in page
    # The text box's second id, beside the box.
    assert re.search(r'data-testid="error-input">a submission id is a whole number<', page)
    assert AgentRun.objects.count() == 0


def test_the_page_and_the_api_take_one_definition_and_answer_in_the_same_words(
    organiser_client, task, monkeypatch
):
    """The page form is drawn from the API's input serializer: the same fields,
    labels and help, and the same messages for the same bad input."""
    form = AgentRunForm()
    fields = AgentRunCreateSerializer().fields
    assert list(form.fields) == list(fields)
    for name, field in fields.items():
        assert form.fields[name].label == field.label, name
        assert form.fields[name].help_text == (field.help_text or ""), name
    monkeypatch.delenv("H15_UNSET_API_KEY", raising=False)
    bad = {"agent": "Not A Name", "model": "", "api_key_env": "H15_UNSET_API_KEY"}
    page = organiser_client.post(reverse("agent_runs:run-new"), _form(max_tokens="many", **bad))
    api_url = reverse("api:agent-run-list")
    api = organiser_client.post(
        api_url, {**_form(**bad), "max_tokens": "many"}, content_type="application/json"
    )
    assert (page.status_code, api.status_code) == (400, 400)
    # The serializer's refusal first: nothing reaches the service.
    api_messages = {(e["field"], e["message"]) for e in api.json()["errors"]}
    assert api_messages == {("max_tokens", "A valid integer is required.")}
    assert 'data-testid="error-max_tokens">A valid integer is required.<' in page.content.decode()
    # Then the service's, the same words on both.
    page = organiser_client.post(reverse("agent_runs:run-new"), _form(**bad))
    api = organiser_client.post(api_url, _form(**bad), content_type="application/json")
    shown = html.unescape(page.content.decode())
    for error in api.json()["errors"]:
        assert f'data-testid="error-{error["field"]}">{error["message"]}<' in shown, error
    assert {e["field"] for e in api.json()["errors"]} >= {"agent", "model", "api_key_env"}
    assert AgentRun.objects.count() == 0


def test_a_good_form_queues_a_run_after_commit_and_redirects_to_it(
    organiser_client, organiser, task, fake_llm, django_capture_on_commit_callbacks
):
    # The form checks the model with one small call before anything is queued.
    fake_llm.default = answer("ok")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = organiser_client.post(
            reverse("agent_runs:run-new"),
            _form(api_base=fake_llm.url, no_lit_review="on", max_cost="2.5", max_tokens="100000"),
        )
    run = AgentRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("agent_runs:run-detail", args=[run.pk])
    # agent_run_enqueue, once the row is committed (beside the caches' bumps)
    assert [c.keywords for c in callbacks if getattr(c, "func", None) is agent_run_enqueue] == [
        {"run_id": run.pk}
    ]
    assert (run.task, run.requested_by, run.agent.name) == (task, organiser, "mlr-agent-test")
    assert (run.model, run.coding_model, run.lit_model) == (MODEL, MODEL, "")
    assert (run.max_steps, run.max_tokens, str(run.max_cost_usd), run.seed) == (
        20,
        100000,
        "2.5000",
        3,
    )
    assert [s.name for s in run.stages.all()][:2] == [StageName.IDEA, StageName.LIT]


def test_several_tasks_make_one_run_each_and_land_on_the_list(organiser_client, task, fake_llm):
    TaskFactory(slug="icml2024_other", title="Other workshop")
    fake_llm.default = answer("ok")  # the model check before queueing
    response = organiser_client.post(
        reverse("agent_runs:run-new"),
        _form(
            api_base=fake_llm.url,
            task=["iclr2025_agents", "icml2024_other"],
            mode="stepwise",
            stage="idea",
        ),
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("agent_runs:run-list") + "?mine=1"
    assert sorted(AgentRun.objects.values_list("task__slug", "stage")) == [
        ("iclr2025_agents", "idea"),
        ("icml2024_other", "idea"),
    ]
    page = organiser_client.get(response["Location"]).content.decode()
    assert page.count('data-testid="agent-run-row"') == 2
    assert "icml2024_other" in page and "Queued" in page


def test_the_run_page_shows_the_stages_and_cancel_ends_the_run(organiser_client, task, organiser):
    run = _run(task, organiser)
    page = organiser_client.get(reverse("agent_runs:run-detail", args=[run.pk])).content.decode()
    for label in ["Idea", "Literature review", "Proposal", "Experiment", "Paper"]:
        assert f"<td>{label}</td>" in page
    assert 'data-testid="run-cancel"' in page and "data-confirm=" in page
    assert 'src="/static/js/agent_runs.js"' in page

    response = organiser_client.post(reverse("agent_runs:run-cancel", args=[run.pk]), follow=True)
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.failed_stage == StageName.IDEA
    assert run.stages.get(name=StageName.IDEA).status == StageStatus.CANCELLED
    page = response.content.decode()
    assert "The run is cancelled." in page
    assert "Cancelled at the idea stage" in page and "cancelled by organiser" in page
    assert 'data-testid="run-cancel"' not in page

    again = organiser_client.post(reverse("agent_runs:run-cancel", args=[run.pk]), follow=True)
    assert "Not cancelled: the run is already cancelled." in again.content.decode()
    assert organiser_client.get(reverse("agent_runs:run-cancel", args=[run.pk])).status_code == 405


def _trace_with_steps(run):
    workspace = workspace_of(run.pk)
    workspace.mkdir(parents=True, exist_ok=True)
    trace = Trace(workspace / TRACE_NAME, model=run.model, agent=run.agent.name)
    trace.step(
        stage="idea",
        started_at="2026-01-01T00:00:00.000+00:00",
        duration_s=1.5,
        message={"role": "assistant", "content": "# An idea <script>alert(1)</script>"},
        tool_results=[],
        usage={"prompt_tokens": 100, "completion_tokens": 20},
        cost_usd=0.0012,
    )
    call = {"path": "code/run.py", "content": "print('<b>accuracy</b> 0.91')" + "x" * 5000}
    trace.step(
        stage="experiment",
        started_at="2026-01-01T00:00:02.000+00:00",
        duration_s=0.7,
        message={
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": json.dumps(call)},
                }
            ],
        },
        tool_results=[
            {"tool_call_id": "call_1", "name": "write_file", "content": "wrote code/run.py"}
        ],
        usage={"prompt_tokens": 300, "completion_tokens": 40},
        cost_usd=None,
    )
    return trace


def test_the_progress_json_gives_the_stages_the_cost_and_the_transcript_from_a_step(
    organiser_client, task, organiser
):
    run = _run(task, organiser)
    AgentRun.objects.filter(pk=run.pk).update(tokens=460, cost_usd="0.0012", unpriced_calls=1)
    _trace_with_steps(run)
    url = reverse("agent_runs:run-progress", args=[run.pk])

    progress = organiser_client.get(url).json()
    assert (progress["status"], progress["tokens"], progress["cost_usd"]) == (
        "queued",
        460,
        "0.001200",
    )
    assert progress["cost_is_lower_bound"] is True and progress["is_final"] is False
    assert [s["name"] for s in progress["stages"]] == [
        "idea",
        "lit",
        "proposal",
        "experiment",
        "paper",
        "store",
    ]
    transcript = progress["transcript"]
    assert (transcript["total"], transcript["next_after"], transcript["reset"]) == (2, 2, False)
    first, second = transcript["steps"]
    assert first["text"] == "# An idea <script>alert(1)</script>" and first["tokens"] == 120
    assert second["tool_calls"][0]["name"] == "write_file"
    assert second["tool_calls"][0]["arguments"].endswith("more characters)")
    assert second["tool_results"] == [{"name": "write_file", "content": "wrote code/run.py"}]

    later = organiser_client.get(url, {"after": 1}).json()["transcript"]
    assert [s["index"] for s in later["steps"]] == [1]
    # A stage run again dropped steps: the reader starts over.
    assert organiser_client.get(url, {"after": 9}).json()["transcript"]["reset"] is True
    bad = organiser_client.get(url, {"after": "two"})
    assert bad.status_code == 400
    assert bad.json()["errors"] == [
        {"field": "after", "code": "invalid", "message": "after must be a whole number of steps"}
    ]
    assert organiser_client.get(reverse("agent_runs:run-progress", args=[999])).status_code == 404


def test_the_poll_gets_new_steps_drawn_by_the_trace_viewers_template(
    organiser_client, task, organiser
):
    """The live transcript's new steps come from the server, as the page's own
    (one step template), with where to ask next; the script builds no step."""
    run = _run(task, organiser)
    _trace_with_steps(run)
    url = reverse("agent_runs:run-steps", args=[run.pk])
    fragment = organiser_client.get(url, {"after": 1}).content.decode()
    assert 'data-next-after="2"' in fragment and 'data-total="2"' in fragment
    assert fragment.count('data-testid="transcript-step"') == 1
    assert 'data-index="1"' in fragment and "<summary><code>write_file</code>" in fragment
    # The call and its result, paired as the trace viewer shows them.
    assert "wrote code/run.py" in fragment and "<b>accuracy</b>" not in fragment
    first = organiser_client.get(url).content.decode()
    assert "# An idea &lt;script&gt;alert(1)&lt;/script&gt;" in first
    assert 'data-reset="true"' in organiser_client.get(url, {"after": 9}).content.decode()
    assert organiser_client.get(url, {"after": "two"}).status_code == 400


def test_model_output_in_the_transcript_is_escaped(organiser_client, task, organiser):
    run = _run(task, organiser)
    _trace_with_steps(run)
    page = organiser_client.get(reverse("agent_runs:run-detail", args=[run.pk])).content.decode()
    assert "# An idea &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page and "<b>accuracy</b>" not in page
    assert page.count('data-testid="transcript-step"') == 2
    assert "<summary><code>write_file</code>" in page


def test_the_api_creates_follows_and_cancels_runs(client, organiser, task, monkeypatch):
    client.force_login(organiser)
    monkeypatch.delenv("H15_UNSET_API_KEY", raising=False)
    url = reverse("api:agent-run-list")
    bad = client.post(
        url,
        {
            "task": ["nope"],
            "agent": "mlr-agent-test",
            "model": MODEL,
            "max_steps": 0,
            "api_key_env": "H15_UNSET_API_KEY",
        },
        content_type="application/json",
    )
    assert bad.status_code == 400
    assert {(e["field"], e["code"]) for e in bad.json()["errors"]} == {
        ("task", "not_found"),
        ("api_key_env", "missing_key"),
        ("max_steps", "invalid"),
    }
    huge = client.post(
        url,
        {"task": [task.slug], "agent": "a", "model": MODEL, "max_steps": 2**40},
        content_type="application/json",
    )
    assert huge.status_code == 400 and huge.json()["errors"][0]["field"] == "max_steps"
    assert AgentRun.objects.count() == 0

    created = client.post(
        url,
        {
            "task": [task.slug],
            "agent": "mlr-agent-test",
            "model": MODEL,
            "api_base": API_BASE,
            "mode": "stepwise",
            "stage": "idea",
            "max_cost": "1.25",
        },
        content_type="application/json",
    )
    assert created.status_code == 201
    (body,) = created.json()
    assert (body["task"], body["stage"], body["status"], body["max_cost_usd"]) == (
        task.slug,
        "idea",
        "queued",
        "1.2500",
    )
    assert [s["name"] for s in body["stages"]] == ["idea", "store"]
    detail = client.get(reverse("api:agent-run-detail", args=[body["id"]])).json()
    assert detail["page_url"] == reverse("agent_runs:run-detail", args=[body["id"]])
    assert detail["transcript"]["steps"] == []

    cancel_url = reverse("api:agent-run-cancel", args=[body["id"]])
    cancelled = client.post(cancel_url)
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
    again = client.post(cancel_url)
    assert again.status_code == 400 and again.json()["errors"][0]["code"] == "final"
    missing = client.get(reverse("api:agent-run-detail", args=[999]))
    assert missing.status_code == 404 and missing.json()["errors"][0]["code"] == "not_found"


@pytest.fixture
def eager_celery():
    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


def test_a_run_from_the_form_runs_and_its_page_shows_the_submission(
    organiser_client, task, eager_celery, django_capture_on_commit_callbacks
):
    """A stepwise idea run, executed eagerly against the loopback model server."""
    server = FakeLLMServer(default=answer("# Sparse agents\n\nAn idea that can be tested."))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = organiser_client.post(
                reverse("agent_runs:run-new"),
                _form(api_base=server.url, api_key_env=TEST_KEY_ENV, mode="stepwise", stage="idea"),
            )
    finally:
        server.close()
    run = AgentRun.objects.get()
    assert run.status == RunStatus.FINISHED, run.reason
    # The form's check of the model, then the idea stage's one call.
    assert len(server.requests) == 2
    assert {r.model for r in server.requests} == {"gpt-4o-mini"}
    assert server.requests[-1].headers["authorization"] == "Bearer sk-test-agent-key"
    page = organiser_client.get(response["Location"]).content.decode()
    assert f'href="/submissions/{run.submission_id}/"' in page
    trace_url = reverse("submissions:trace", args=[run.submission_id, "mlr-agent_output.json"])
    assert f'href="{trace_url}"' in page
    assert organiser_client.get(trace_url).status_code == 200
    assert "# Sparse agents" in page and page.count('data-testid="transcript-step"') == 1
    assert 'data-testid="run-cancel"' not in page
    progress = organiser_client.get(reverse("agent_runs:run-progress", args=[run.pk])).json()
    assert progress["is_final"] is True and progress["submission"] == run.submission_id
    assert float(progress["cost_usd"]) > 0 and progress["tokens"] == 1500
