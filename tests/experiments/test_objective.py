"""The objective protocol on the task that ships with the site: dev runs never
see test data, the agent's best dev run is the one evaluated (once) on test,
and relative improvement to human is right in both metric directions."""

import csv
import hashlib
import math
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import Stage, TaskKind
from experiments.errors import ExperimentRefused
from experiments.models import ExperimentStatus, ObjectiveResult, ObjectiveTask
from experiments.queue import experiment_queue, objective_test_queue
from experiments.runner import experiment_execute
from experiments.selectors import objective_leaderboard_rows
from experiments.shipped import SHIPPED_ROOT, objective_tasks_install

from .factories import AgentFactory, submission_with_files

pytestmark = pytest.mark.django_db

SHIPPED = SHIPPED_ROOT / "neurips2025_objective_curve_fitting"


@pytest.fixture
def curve(experiment_settings) -> ObjectiveTask:
    (objective,) = objective_tasks_install().objectives
    return objective


def method_files(name: str) -> dict[str, str]:
    folder = SHIPPED / "methods" / name
    return {path.name: path.read_text() for path in folder.iterdir() if path.is_file()}


def submit(objective, agent, files) -> object:
    return submission_with_files(files, agent=agent, task=objective.task, stage=Stage.METHOD)


def run(submission, phase="dev"):
    queued = experiment_queue(submission=submission, phase=phase)
    done = experiment_execute(run_id=queued.pk)
    assert done.status == ExperimentStatus.SUCCEEDED, (done.reason, done.log.read())
    return done


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def output_text(run, name: str) -> str:
    from django.core.files.storage import default_storage

    with default_storage.open(f"experiments/{run.pk}/outputs/{name}") as handle:
        return handle.read().decode()


def rmse(predictions: str, labels: Path) -> float:
    predicted = {int(r["id"]): float(r["y"]) for r in csv.DictReader(StringIO(predictions))}
    with labels.open() as handle:
        truth = {int(r["id"]): float(r["y"]) for r in csv.DictReader(handle)}
    return math.sqrt(sum((predicted[i] - y) ** 2 for i, y in truth.items()) / len(truth))


SNOOP = """
import hashlib, os
found = []
for top in ["/"]:
    for folder, dirs, files in os.walk(top):
        skip = ("/proc", "/sys", "/usr", "/dev")
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
        for name in files:
            path = os.path.join(folder, name)
            try:
                found.append(path + " " + hashlib.sha256(open(path, "rb").read()).hexdigest())
            except OSError:
                pass
tries = [TEST_DIR + "/public/inputs.csv", TEST_DIR + "/private/labels.csv"]
for path in tries + ["/private/labels.csv"]:
    try:
        open(path).read()
        found.append("OPENED-TEST-FILE " + path)
    except OSError:
        found.append("blocked " + path)
os.makedirs(os.environ["OUTPUT_DIR"], exist_ok=True)
open(os.environ["OUTPUT_DIR"] + "/snoop.txt", "w").write("\\n".join(found))
"""


def test_the_shipped_task_is_installed_as_an_objective_task(curve):
    assert curve.task.kind == TaskKind.OBJECTIVE
    assert curve.metric == "rmse" and not curve.higher_is_better
    assert "Curve fitting" in curve.task.title
    for folder in (curve.dev_data_dir, curve.test_data_dir):
        assert (Path(folder) / "public" / "inputs.csv").is_file()
        assert (Path(folder) / "private" / "labels.csv").is_file()
    # Installing again changes nothing.
    again = objective_tasks_install()
    assert again.counts == {"objective tasks unchanged": 1}


def test_dev_runs_never_see_test_data(curve):
    test_dir = Path(curve.test_data_dir)
    dev_dir = Path(curve.dev_data_dir)
    snoop = SNOOP.replace("TEST_DIR", repr(str(test_dir)))
    files = method_files("knn")
    files["method.py"] = snoop + "\n" + files["method.py"]
    dev = run(submit(curve, AgentFactory(), files))

    seen = output_text(dev, "output/snoop.txt")
    # The snoop works: it finds and reads the dev inputs it is given...
    assert sha(dev_dir / "public" / "inputs.csv") in seen
    # ...and nothing of the test data, nor the dev labels the evaluation alone reads.
    for secret in (
        test_dir / "public" / "inputs.csv",
        test_dir / "private" / "labels.csv",
        dev_dir / "private" / "labels.csv",
    ):
        assert sha(secret) not in seen
    assert "OPENED-TEST-FILE" not in seen and seen.count("blocked ") == 3
    # The dev score is the RMSE against the dev labels, on the dev inputs.
    predictions = output_text(dev, "output/predictions.csv")
    assert dev.score == pytest.approx(rmse(predictions, dev_dir / "private" / "labels.csv"))
    assert dev.metrics["n"] == 200


def test_the_best_dev_run_is_evaluated_once_on_test(curve):
    agent = AgentFactory()
    baseline = run(submit(curve, agent, method_files("baseline")))
    knn = run(submit(curve, agent, method_files("knn")))
    assert knn.score < baseline.score  # lower RMSE is better

    test = experiment_execute(run_id=objective_test_queue(agent=agent, objective=curve).pk)

    assert test.status == ExperimentStatus.SUCCEEDED
    assert test.submission_id == knn.submission_id
    assert test.metrics["n"] == 500  # the test inputs, not the dev ones
    result = ObjectiveResult.objects.get(agent=agent, objective=curve)
    assert result.dev_run == knn and result.test_run == test
    assert result.test_score == test.score
    expected = (test.score - curve.baseline_score) / (curve.human_score - curve.baseline_score)
    assert result.relative_improvement == pytest.approx(expected * 100)
    assert result.relative_improvement == pytest.approx(90.6, abs=0.1)
    assert result.lloc > 5 and result.runtime_seconds > 0
    with pytest.raises(ExperimentRefused, match="already evaluated"):
        objective_test_queue(agent=agent, objective=curve)


def test_only_the_best_dev_run_may_be_sent_to_test(curve):
    agent = AgentFactory()
    baseline = run(submit(curve, agent, method_files("baseline")))
    run(submit(curve, agent, method_files("knn")))

    with pytest.raises(ExperimentRefused, match="only the agent's best dev run"):
        experiment_queue(submission=baseline.submission, phase="test")


def test_the_baseline_method_scores_zero_and_the_shipped_scores_hold(curve):
    agent = AgentFactory()
    run(submit(curve, agent, method_files("baseline")))

    test = experiment_execute(run_id=objective_test_queue(agent=agent, objective=curve).pk)

    assert test.score == pytest.approx(curve.baseline_score)
    assert ObjectiveResult.objects.get(agent=agent).relative_improvement == pytest.approx(
        0, abs=1e-6
    )


def test_relative_improvement_for_a_higher_is_better_metric(curve):
    call_command(
        "objective_task",
        "add",
        "--slug=neurips2025_objective_curve_fitting_r2",
        "--title=Curve fitting, scored by R²",
        "--metric=r2",
        "--higher-is-better",
        "--baseline=0.15697684509123477",
        "--human=0.9233309544593186",
        f"--eval-command={curve.eval_command}",
        f"--eval-dir={curve.eval_dir}",
        f"--dev-data={curve.dev_data_dir}",
        f"--test-data={curve.test_data_dir}",
        stdout=StringIO(),
    )
    r2 = ObjectiveTask.objects.get(task__slug="neurips2025_objective_curve_fitting_r2")
    agent = AgentFactory(name="two-task-agent")
    for objective in (curve, r2):
        baseline = run(submit(objective, agent, method_files("baseline")))
        knn = run(submit(objective, agent, method_files("knn")))
        experiment_execute(run_id=objective_test_queue(agent=agent, objective=objective).pk)
    assert knn.score > baseline.score  # higher R² is better

    result = ObjectiveResult.objects.get(agent=agent, objective=r2)
    assert result.test_run.submission_id == knn.submission_id
    expected = (result.test_score - 0.15697684509123477) / (
        0.9233309544593186 - 0.15697684509123477
    )
    assert result.relative_improvement == pytest.approx(expected * 100)
    assert result.relative_improvement == pytest.approx(95.2, abs=0.1)

    (row,) = objective_leaderboard_rows()
    assert row.agent_name == "two-task-agent"
    assert [cell.task_slug for cell in row.tasks] == [curve.task.slug, r2.task.slug]
    assert row.mean_relative_improvement == pytest.approx(
        (row.tasks[0].relative_improvement + row.tasks[1].relative_improvement) / 2
    )
    assert all(cell.lloc > 0 and cell.runtime_seconds > 0 for cell in row.tasks)


def test_an_objective_task_whose_human_does_not_beat_the_baseline_is_refused(curve):
    with pytest.raises(CommandError) as error:
        call_command(
            "objective_task",
            "add",
            "--slug=neurips2025_backwards",
            "--metric=rmse",
            "--lower-is-better",
            "--baseline=0.2",
            "--human=0.7",
            "--eval-command=true",
            f"--dev-data={curve.dev_data_dir}",
            f"--test-data={curve.dev_data_dir}",
        )
    assert "must be better than the baseline" in str(error.value)
    assert "dev and test data must be different" in str(error.value)
    assert not ObjectiveTask.objects.filter(task__slug="neurips2025_backwards").exists()


def test_a_method_that_writes_no_predictions_fails_with_the_evaluations_reason(curve):
    submission = submit(curve, AgentFactory(), {"run.sh": "echo 'I predict nothing'\n"})
    done = experiment_execute(run_id=experiment_queue(submission=submission, phase="dev").pk)

    assert done.status == ExperimentStatus.FAILED
    assert "evaluation failed" in done.reason
    assert done.score is None
    assert "cannot read the predictions" in done.log.read().decode()


def test_a_method_cannot_point_the_evaluation_at_the_labels(curve):
    # A link in its output to where the evaluation will find the labels.
    cheat = "mkdir -p output && ln -s /private/labels.csv output/predictions.csv\n"
    submission = submit(curve, AgentFactory(), {"run.sh": cheat})

    done = experiment_execute(run_id=experiment_queue(submission=submission, phase="dev").pk)

    assert done.status == ExperimentStatus.FAILED and done.score is None
    assert "cannot read the predictions" in done.log.read().decode()
