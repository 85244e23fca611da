"""What users see of experiment runs: the API, the run pages with their log,
the organiser's cancel and re-run in the admin, and GPU requests refused at
queue time."""

import pytest
from django.template import Context, Template

from experiments.errors import ExperimentRefused
from experiments.models import ExperimentRun, ExperimentStatus
from experiments.queue import experiment_queue
from experiments.runner import experiment_execute
from submissions.models import ArtifactKind
from tests.experiments.factories import submission_with_files

pytestmark = pytest.mark.django_db

RUN_SH = "python3 -c \"print('accuracy 0.8123'); print('line two')\"\n"
PAPER = "| Method | Accuracy |\n| --- | --- |\n| Ours | 0.95 |\n"


@pytest.fixture
def finished(experiment_settings):
    submission = submission_with_files(
        {"run.sh": RUN_SH, "paper.md": PAPER}, kinds={"paper.md": ArtifactKind.PAPER}
    )
    run = experiment_queue(submission=submission, phase="repro")
    return experiment_execute(run_id=run.pk)


def test_the_api_lists_a_submissions_runs_with_status_metrics_and_verdict(client, finished):
    other = submission_with_files({"run.sh": "true\n"})
    experiment_queue(submission=other, phase="repro")

    response = client.get(f"/api/experiments/?submission={finished.submission_id}")

    assert response.status_code == 200
    (item,) = response.json()["results"]
    assert item["id"] == finished.pk
    assert item["status"] == "succeeded" and item["phase"] == "repro"
    assert item["exit_code"] == 0 and item["wall_seconds"] > 0
    assert item["reproduction"]["verdict"] == "not_reproduced"
    assert item["reproduction"]["evidence"][0]["claimed"] == 0.95
    assert item["reproduction"]["evidence"][0]["closest"] == 0.8123
    assert item["log_url"] == f"/experiments/{finished.pk}/log"
    queued = client.get(f"/api/experiments/?submission={other.pk}").json()["results"]
    assert queued[0]["status"] == "queued" and queued[0]["reproduction"] is None


def test_the_api_refuses_writes(client, finished):
    assert client.post("/api/experiments/", {}).status_code in (403, 405)


def test_the_log_endpoint_gives_the_tail_then_what_follows(client, finished):
    whole = client.get(f"/experiments/{finished.pk}/log").json()
    assert "accuracy 0.8123\nline two\n" in whole["text"]
    assert whole["finished"] and whole["status"] == "succeeded"
    assert whole["offset"] == whole["size"]

    middle = whole["text"].index("line two")
    rest = client.get(f"/experiments/{finished.pk}/log?offset={middle}").json()
    assert rest["text"].startswith("line two")
    assert client.get(f"/experiments/{finished.pk}/log?offset=x").status_code == 400
    assert client.get("/experiments/999999/log").status_code == 404


def test_the_run_page_shows_status_verdict_and_log(client, finished):
    page = client.get(f"/experiments/{finished.pk}/").content.decode()
    assert "Succeeded" in page
    assert "Not reproduced" in page and "0.95" in page and "0.8123" in page
    assert f'data-log-url="/experiments/{finished.pk}/log"' in page

    listing = client.get(f"/experiments/?submission={finished.submission_id}")
    assert listing.status_code == 200 and f"Run {finished.pk}" in listing.content.decode()
    assert client.get("/experiments/?submission=abc").status_code == 404
    assert client.get("/experiments/?submission=999999").status_code == 404


def test_the_partial_renders_on_any_page_with_the_template_tag(finished):
    html = Template("{% load experiments %}{% experiment_runs submission %}").render(
        Context({"submission": finished.submission})
    )
    assert 'data-testid="experiment-runs"' in html and f"Run {finished.pk}" in html


def test_an_organiser_cancels_a_queued_run_and_re_runs_a_finished_one(admin_client, finished):
    queued = experiment_queue(submission=finished.submission, phase="repro")

    admin_client.post(
        "/admin/experiments/experimentrun/",
        {"action": "cancel_runs", "_selected_action": [queued.pk]},
    )
    admin_client.post(
        "/admin/experiments/experimentrun/",
        {"action": "rerun_runs", "_selected_action": [finished.pk]},
    )

    queued.refresh_from_db()
    assert queued.status == ExperimentStatus.CANCELLED
    assert "cancelled by an organiser" in queued.reason
    rerun = ExperimentRun.objects.get(rerun_of=finished)
    assert rerun.status == ExperimentStatus.QUEUED and rerun.command == finished.command
    assert experiment_execute(run_id=rerun.pk).status == ExperimentStatus.SUCCEEDED
    # A cancelled run never starts, even if its message arrives.
    assert experiment_execute(run_id=queued.pk).status == ExperimentStatus.CANCELLED


def test_a_run_asking_for_more_gpus_than_any_host_has_is_refused(settings, experiment_settings):
    submission = submission_with_files({"run.sh": "true\n"})
    settings.GPU_MAX_PER_HOST = 2

    with pytest.raises(ExperimentRefused, match="asks for 3 GPU.*largest gpu worker host has 2"):
        experiment_queue(submission=submission, phase="repro", gpu_count=3)
    assert experiment_queue(submission=submission, phase="repro", gpu_count=2).gpu_count == 2

    settings.GPU_MAX_PER_HOST = None  # and no gpu worker has announced itself
    with pytest.raises(ExperimentRefused, match="no gpu worker has announced"):
        experiment_queue(submission=submission, phase="repro", gpu_count=1)
    assert not ExperimentRun.objects.filter(gpu_count__in=[1, 3]).exists()


def test_a_run_held_by_a_live_worker_is_left_alone_and_a_lost_one_is_taken_over(
    experiment_settings,
):
    from datetime import timedelta

    from django.utils import timezone

    submission = submission_with_files({"run.sh": "echo taken over\n"})
    run = experiment_queue(submission=submission, phase="repro")
    now = timezone.now()
    ExperimentRun.objects.filter(pk=run.pk).update(
        status=ExperimentStatus.RUNNING, started_at=now, heartbeat_at=now, worker_host="other"
    )

    assert experiment_execute(run_id=run.pk).status == ExperimentStatus.RUNNING

    ExperimentRun.objects.filter(pk=run.pk).update(heartbeat_at=now - timedelta(minutes=10))
    taken = experiment_execute(run_id=run.pk)
    assert taken.status == ExperimentStatus.SUCCEEDED and taken.worker_host != "other"
    assert b"taken over" in taken.log.read()
