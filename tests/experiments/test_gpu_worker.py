"""Runs go through real Celery worker processes on the `gpu` queue: the
command follows the log, escape attempts leave the worker healthy, GPU slots
hold across worker processes, and organisers can cancel a running run."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from experiments.errors import ExperimentRefused
from experiments.models import ExperimentLimit, ExperimentRun, ExperimentStatus
from experiments.queue import experiment_cancel, experiment_queue
from experiments.selectors import experiment_log_chunk
from sandbox import processes_of_uid
from submissions.models import ArtifactKind
from tests.experiments.factories import submission_with_files
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backends]


def finished(run: ExperimentRun, timeout=90) -> ExperimentRun:
    def done():
        run.refresh_from_db()
        return run.is_finished

    wait_until(done, timeout=timeout, message=f"run {run.pk} to finish")
    return run


def submission(code: str, **kwargs):
    return submission_with_files({"run.sh": code}, **kwargs)


def test_run_experiment_follows_the_log_of_a_run_on_a_gpu_worker(
    experiment_settings, celery_worker_process
):
    worker = celery_worker_process("gpu", env=experiment_settings.worker_env)
    paper = "| Method | Score |\n| --- | --- |\n| Ours | 0.625 |\n"
    honest = submission_with_files(
        {
            "run.sh": "for i in 1 2 3; do echo step $i; sleep 0.3; done; echo score 0.625\n",
            "paper.md": paper,
        },
        kinds={"paper.md": ArtifactKind.PAPER},
    )
    out = StringIO()

    call_command(
        "run_experiment", f"--submission={honest.pk}", "--phase=repro", "--wait", stdout=out
    )

    text = out.getvalue()
    assert "step 1\nstep 2\nstep 3\nscore 0.625" in text
    assert "succeeded" in text and "reproduction: reproduced" in text
    run = ExperimentRun.objects.get(submission=honest)
    assert run.worker_host and run.worker_host in worker.node


def test_escape_attempts_through_the_worker_leave_it_healthy(
    experiment_settings, celery_worker_process
):
    celery_worker_process("gpu", env=experiment_settings.worker_env)
    fork_bomb = experiment_queue(
        submission=submission(
            "python3 -c 'import os\nwhile True:\n  try: os.fork()\n  except OSError: pass'\n"
        ),
        phase="repro",
    )
    loop = experiment_queue(
        submission=submission("while :; do :; done\n"), phase="repro", time_limit_seconds=2
    )
    healthy = experiment_queue(submission=submission("echo still here\n"), phase="repro")

    assert finished(fork_bomb).limit_hit == ExperimentLimit.PROCESSES
    assert fork_bomb.status == ExperimentStatus.FAILED
    assert finished(loop).status == ExperimentStatus.TIMED_OUT
    assert finished(healthy).status == ExperimentStatus.SUCCEEDED
    assert b"still here" in healthy.log.read()


def test_gpu_slots_hold_across_worker_processes_and_a_running_run_can_be_cancelled(
    experiment_settings, celery_worker_process
):
    # Two prefork processes on a host that says it has two GPUs.
    env = {**experiment_settings.worker_env, "GPU_COUNT": "2"}
    celery_worker_process("gpu", concurrency=2, env=env)
    code = "echo gpus=$CUDA_VISIBLE_DEVICES; sleep 120\n"
    first = experiment_queue(submission=submission(code), phase="repro", gpu_count=1)
    second = experiment_queue(submission=submission(code), phase="repro", gpu_count=1)

    def both_running():
        runs = list(ExperimentRun.objects.filter(pk__in=[first.pk, second.pk]))
        return all(r.status == ExperimentStatus.RUNNING for r in runs) and runs

    runs = wait_until(both_running, message="both runs to be running at once")
    assert sorted(gpu for run in runs for gpu in run.gpus) == [0, 1]
    for run in runs:
        # Read as the run's page does (the row is re-read: the log is named after the claim).
        def log_names_its_gpu(run: ExperimentRun = run) -> bool:
            log = experiment_log_chunk(run=ExperimentRun.objects.get(pk=run.pk), offset=0)
            return f"gpus={run.gpus[0]}\n" in log.text

        wait_until(
            log_names_its_gpu,
            timeout=30,
            message="the run's log to name its GPU",
        )
    # The workers announced two GPUs: three are refused, two are not.
    with pytest.raises(ExperimentRefused, match="largest gpu worker host has 2"):
        experiment_queue(submission=submission("true\n"), phase="repro", gpu_count=3)

    for run in runs:
        experiment_cancel(run=run)
    for run in runs:
        assert finished(run, timeout=30).status == ExperimentStatus.CANCELLED
        assert "cancelled by an organiser" in run.reason
    for slot in range(experiment_settings.SANDBOX_MAX_JOBS):
        assert processes_of_uid(experiment_settings.SANDBOX_UID_BASE + slot) == []


def test_run_experiment_names_a_refusal(experiment_settings):
    idea = submission_with_files({"idea.md": "an idea"}, stage="idea")
    with pytest.raises(CommandError, match="reproduction runs are for experiment"):
        call_command("run_experiment", f"--submission={idea.pk}", "--phase=repro")
    with pytest.raises(CommandError, match="no submission 999999"):
        call_command("run_experiment", "--submission=999999", "--phase=dev")


def test_the_shipped_examples_run_on_a_worker_and_evaluate_puts_them_on_the_leaderboard(
    experiment_settings, celery_worker_process
):
    from experiments.selectors import objective_leaderboard_rows

    celery_worker_process("gpu", env=experiment_settings.worker_env)
    out = StringIO()
    call_command("objective_task", "install", "--examples", stdout=out)
    assert "2 example dev runs queued" in out.getvalue()
    for run in ExperimentRun.objects.all():
        assert finished(run).status == ExperimentStatus.SUCCEEDED

    out = StringIO()
    call_command(
        "objective_task", "evaluate", "--slug=neurips2025_objective_curve_fitting", stdout=out
    )
    assert "2 test run(s) queued" in out.getvalue()
    for run in ExperimentRun.objects.filter(phase="test"):
        assert finished(run).status == ExperimentStatus.SUCCEEDED

    rows = objective_leaderboard_rows()
    assert [row.agent_name for row in rows] == ["objective-example-knn", "objective-baseline"]
    assert rows[0].mean_relative_improvement == pytest.approx(90.6, abs=0.1)
    assert rows[1].mean_relative_improvement == pytest.approx(0, abs=1e-6)
    out = StringIO()
    call_command(
        "objective_task", "evaluate", "--slug=neurips2025_objective_curve_fitting", stdout=out
    )
    assert out.getvalue().count("already evaluated on test") == 2
