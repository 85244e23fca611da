"""An organiser starts an agent run in the browser; a real Celery worker runs it
against the loopback model server and the run page follows it live: the stages,
the cost so far, the transcript, then the stored submission."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from agent_runs.models import AgentRun, RunStatus
from benchmark.roles import organiser_grant
from tests.agent_runs.conftest import (  # noqa: F401 - the agent-run fixtures
    TEST_KEY_ENV,
    _agent_key,
    agent_settings,
    experiment_root,
    experiment_settings,
    sandbox_ready,
)
from tests.agent_runs.scripted_agent import PRINTED, scripted_agent
from tests.benchmark.factories import PASSWORD, TaskFactory, UserFactory
from tests.support.fake_llm import FakeLLMServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path(os.environ.get("E2E_SCREENSHOTS", "/tmp/mlrbench-e2e-shots"))  # noqa: S108


def _sign_in(page, next_url: str) -> None:
    page.goto(f"/accounts/login/?next={next_url}")
    page.get_by_label("Username").fill("grace")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


@pytest.mark.backends
def test_a_run_started_from_the_form_is_followed_live_on_its_page(
    page,
    agent_settings,  # noqa: F811
    celery_worker_process,
):
    """End to end: the scripted model writes, runs and finishes in the sandbox."""
    organiser_grant(user=UserFactory(username="grace"))
    TaskFactory(slug="iclr2025_agents", title="Agents workshop")
    # A slow idea: the page has time to show the run while it is running.
    server = FakeLLMServer(default=scripted_agent(slow={"idea": 4}))
    try:
        celery_worker_process("judge,gpu", env=agent_settings.worker_env)
        page.set_viewport_size({"width": 1366, "height": 900})
        _sign_in(page, "/agent-runs/new/")
        page.get_by_label("Tasks").select_option("iclr2025_agents")
        page.get_by_label("Idea, proposal and paper model").fill("openai/scripted-model")
        page.get_by_label("API base URL").fill(server.url)
        page.get_by_label("API key variable").fill(TEST_KEY_ENV)
        page.get_by_label("Max steps").fill("10")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "agent-run-form.png"), full_page=True)
        page.get_by_role("button", name="Queue the run(s)").click()

        expect(page.get_by_test_id("run-status")).to_be_visible()
        run = AgentRun.objects.get()
        assert page.url.endswith(f"/agent-runs/{run.pk}/")
        status = page.get_by_test_id("run-status")
        # The poll shows the stage running before the answer arrives...
        expect(page.locator("tr[data-stage=idea] [data-field=status]")).to_have_text(
            "Running", timeout=30_000
        )
        expect(status).to_have_text("Running")
        page.screenshot(path=str(SHOTS / "agent-run-running.png"), full_page=True)
        # ...the transcript grows with the coding loop's tool calls...
        steps = page.get_by_test_id("transcript-step")
        calls = page.locator("[data-testid=tool-call] summary code", has_text="write_file")
        expect(steps.filter(has=calls)).to_have_count(1, timeout=90_000)
        # ...and the run ends: the page shows the submission, the tokens and every step.
        expect(page.get_by_test_id("run-submission")).to_be_visible(timeout=90_000)
        expect(status).to_have_text("Finished")
        expect(steps).to_have_count(7)
        expect(steps.filter(has_text=f"accuracy: {PRINTED}")).to_have_count(1)
        assert page.get_by_test_id("run-tokens").inner_text() == "10,500"
        expect(page.locator("tr[data-stage=store] [data-field=status]")).to_have_text("Finished")
        page.screenshot(path=str(SHOTS / "agent-run-finished.png"), full_page=True)
    finally:
        server.close()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED and run.submission_id is not None


def test_cancel_asks_first_and_says_where_the_run_stopped(page, media_root):
    organiser = UserFactory(username="grace")
    organiser_grant(user=organiser)
    task = TaskFactory(slug="iclr2025_agents", title="Agents workshop")
    from agent_runs.services import agent_run_create

    # No worker: the run stays queued until it is cancelled.
    (run,) = agent_run_create(
        tasks=[task.slug],
        agent_name="mlr-agent-test",
        model="openai/gpt-4o-mini",
        api_base="http://127.0.0.1:9/v1",
        requested_by=organiser,
    )
    _sign_in(page, f"/agent-runs/{run.pk}/")
    answers = iter([False, True])
    page.on("dialog", lambda dialog: dialog.accept() if next(answers) else dialog.dismiss())

    page.get_by_test_id("run-cancel").click()  # dismissed: nothing happens
    expect(page.get_by_test_id("run-status")).to_have_text("Queued")
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED

    page.get_by_test_id("run-cancel").click()
    expect(page.get_by_test_id("run-reason")).to_contain_text("Cancelled at the idea stage")
    expect(page.get_by_test_id("run-status")).to_have_text("Cancelled")
    page.screenshot(path=str(SHOTS / "agent-run-cancelled.png"), full_page=True)
