"""The run page shows the log while the run is still going, and the status
changes when it ends, without reloading."""

import pytest
from playwright.sync_api import expect

from experiments.queue import experiment_queue
from tests.experiments.conftest import (  # noqa: F401 - the experiment fixtures
    experiment_root,
    experiment_settings,
    sandbox_ready,
)
from tests.experiments.factories import submission_with_files

pytestmark = [
    pytest.mark.browser,
    pytest.mark.backends,
    pytest.mark.django_db(transaction=True),
]


def test_the_log_tail_streams_into_the_run_page(experiment_settings, celery_worker_process, page):  # noqa: F811
    celery_worker_process("gpu", env=experiment_settings.worker_env)
    code = "for i in $(seq 16); do echo tick $i; sleep 0.5; done; echo all done\n"
    run = experiment_queue(submission=submission_with_files({"run.sh": code}), phase="repro")

    page.goto(f"/experiments/{run.pk}/")

    log = page.get_by_test_id("run-log")
    status = page.get_by_test_id("run-status")
    expect(log).to_contain_text("tick 2", timeout=60_000)
    # The first lines are on the page while the run is still running...
    assert "all done" not in log.inner_text()
    expect(status).to_have_text("Running")
    # ...and the rest follows, with the final status, without a reload.
    expect(log).to_contain_text("all done", timeout=30_000)
    expect(status).to_have_text("Succeeded", timeout=30_000)
    assert log.inner_text().splitlines().count("tick 16") == 1  # each chunk appended once


def test_the_submission_page_shows_its_runs_logs_under_its_strict_csp(
    experiment_settings,  # noqa: F811
    celery_worker_process,
    page,
):
    celery_worker_process("gpu", env=experiment_settings.worker_env)
    submission = submission_with_files({"run.sh": "echo hello from the sandbox\n"})
    experiment_queue(submission=submission, phase="repro")

    page.goto(f"/submissions/{submission.pk}/")

    # The log is fetched by a script: an inline one would be refused by the CSP.
    expect(page.get_by_test_id("run-log")).to_contain_text("hello from the sandbox", timeout=60_000)
    expect(page.get_by_test_id("run-status")).to_have_text("Succeeded", timeout=30_000)
