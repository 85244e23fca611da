"""When an upload's intake finishes (`submission_ready`), its experiment run
is queued: a dev run for method code, a reproduction run for an experiment
with a run.sh; a refusal is kept as a failed run that says why."""

import pytest

from experiments.models import ExperimentRun, ExperimentStatus
from experiments.shipped import objective_tasks_install
from submissions.models import Stage, SubmissionSource
from submissions.signals import submission_ready
from tests.experiments.factories import curve_method, submission_with_files

KNN_FILES = curve_method("knn")

pytestmark = pytest.mark.django_db


def ready(submission) -> list[ExperimentRun]:
    submission_ready.send(sender=None, submission_id=submission.pk)
    return list(submission.experiment_runs.all())


def test_method_code_gets_a_dev_run_and_an_experiment_a_reproduction_run(experiment_settings):
    (curve,) = objective_tasks_install().objectives
    method = submission_with_files(KNN_FILES, task=curve.task, stage=Stage.METHOD)
    experiment = submission_with_files({"code/run.sh": "true\n"}, stage=Stage.END2END)

    (dev,) = ready(method)
    (repro,) = ready(experiment)

    assert (dev.phase, dev.status, dev.command) == ("dev", "queued", "python main.py -m knn -p dev")
    assert (repro.phase, repro.status) == ("repro", "queued")
    assert len(ready(method)) == 1  # a second signal queues nothing more


def test_nothing_is_queued_for_imports_ideas_or_code_without_run_sh(experiment_settings):
    imported = submission_with_files({"run.sh": "true\n"}, source=SubmissionSource.IMPORT)
    idea = submission_with_files({"run.sh": "true\n"}, stage=Stage.IDEA)
    no_script = submission_with_files({"train.py": "print(1)\n"})

    assert ready(imported) == [] and ready(idea) == [] and ready(no_script) == []


def test_a_refused_run_is_kept_as_a_failed_run_with_the_reason(settings, experiment_settings):
    (curve,) = objective_tasks_install().objectives
    curve.gpu_count = 4
    curve.save()
    settings.GPU_MAX_PER_HOST = 1
    method = submission_with_files(KNN_FILES, task=curve.task, stage=Stage.METHOD)

    (run,) = ready(method)

    assert run.status == ExperimentStatus.FAILED
    assert "asks for 4 GPU(s)" in run.reason and "largest gpu worker host has 1" in run.reason
