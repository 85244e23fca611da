"""The objective protocol on the task that ships with the site (an MLRC-Bench
task folder): dev runs never see test data, the agent's best dev run is the
one evaluated (once) on test, and relative improvement to human is right in
both metric directions; the site's own format (`objective_task add`) too."""

import hashlib
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import TaskKind
from experiments.errors import ExperimentRefused
from experiments.models import ExperimentStatus, ObjectiveFormat, ObjectiveResult, ObjectiveTask
from experiments.queue import experiment_queue, objective_test_queue
from experiments.runner import experiment_execute
from experiments.selectors import objective_leaderboard_rows
from experiments.shipped import SHIPPED_ROOT, objective_tasks_install
from submissions.models import Stage, Submission
from tests.benchmark.factories import AgentFactory
from tests.experiments.factories import submission_with_files

pytestmark = pytest.mark.django_db

SHIPPED = SHIPPED_ROOT / "neurips2025_objective_curve_fitting"
SITE_TASK = Path(__file__).parent / "site_task"


@pytest.fixture
def curve(experiment_settings) -> ObjectiveTask:
    (objective,) = objective_tasks_install().objectives
    return objective


def example_files(name: str) -> dict[str, str]:
    folder = SHIPPED / "examples" / name
    return {
        path.relative_to(folder).as_posix(): path.read_text()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def submit(objective, agent, files) -> Submission:
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


SNOOP = """
import hashlib, os
from methods.BaseMethod import BaseMethod
from methods.KNN import KNN


class Snoop(KNN):
    def run(self, train, xs):
        found = []
        for folder, dirs, files in os.walk("/"):
            skip = ("/proc", "/sys", "/usr", "/dev")
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    found.append(path + " " + hashlib.sha256(open(path, "rb").read()).hexdigest())
                except OSError:
                    pass
        for path in TRIES:
            try:
                open(path).read()
                found.append("OPENED-TEST-FILE " + path)
            except OSError:
                found.append("blocked " + path)
        os.makedirs("output", exist_ok=True)
        open("output/snoop.txt", "w").write("\\n".join(found))
        return super().run(train, xs)
"""


def test_the_shipped_task_is_installed_as_an_mlrc_task(curve):
    assert curve.task.kind == TaskKind.OBJECTIVE
    assert curve.format == ObjectiveFormat.MLRC and curve.version == 1
    assert curve.metric == "rmse" and not curve.higher_is_better
    assert "Curve fitting" in curve.task.title
    # The statement is the folder's research_problem.txt.
    assert "python main.py -m <your method> -p dev" in curve.task.description
    assert "methods/BaseMethod.py" in curve.read_only_files
    env, test_data = Path(curve.dev_data_dir), Path(curve.test_data_dir)
    assert (env / "main.py").is_file() and (env / "data" / "dev_labels.csv").is_file()
    assert (test_data / "test_labels.csv").is_file()
    assert not (env / "data" / "test_labels.csv").exists()
    # Installing again changes nothing.
    again = objective_tasks_install()
    assert again.counts == {"objective tasks unchanged": 1}
    assert again.objectives[0].version == 1


def test_dev_runs_never_see_test_data(curve):
    test_data = Path(curve.test_data_dir)
    env = Path(curve.dev_data_dir)
    tries = ["/work/data/test_inputs.csv", "/work/data/test_labels.csv", str(test_data)]
    files = example_files("knn")
    files["methods/Snoop.py"] = SNOOP.replace("TRIES", repr(tries))
    files["methods/__init__.py"] += "\nfrom methods.Snoop import Snoop\n"
    files["methods/__init__.py"] = files["methods/__init__.py"].replace(
        '"knn": KNN}', '"knn": KNN, "snoop": Snoop}'
    )
    files["method_name.txt"] = "snoop\n"
    dev = run(submit(curve, AgentFactory(), files))

    assert dev.command == "python main.py -m snoop -p dev"
    seen = output_text(dev, "output/snoop.txt")
    # The snoop works: it finds and reads the dev inputs its run is given...
    assert sha(env / "data" / "dev_inputs.csv") in seen
    # ...and nothing of the test data.
    for secret in test_data.iterdir():
        assert sha(secret) not in seen
    assert "OPENED-TEST-FILE" not in seen and seen.count("blocked ") == 3
    assert dev.metrics["phase"] == "dev" and dev.metrics["method_name"] == "snoop"


def test_the_best_dev_run_is_evaluated_once_on_test(curve):
    agent = AgentFactory()
    baseline = run(submit(curve, agent, example_files("baseline")))
    knn = run(submit(curve, agent, example_files("knn")))
    assert knn.score < baseline.score  # lower RMSE is better

    test = experiment_execute(run_id=objective_test_queue(agent=agent, objective=curve).pk)

    assert test.status == ExperimentStatus.SUCCEEDED
    assert test.submission_id == knn.submission_id
    assert test.command == "python main.py -m knn -p test"
    assert test.metrics["phase"] == "test"
    result = ObjectiveResult.objects.get(agent=agent, objective=curve)
    assert result.dev_run == knn and result.test_run == test
    assert result.test_score == test.score
    expected = (test.score - curve.baseline_score) / (curve.human_score - curve.baseline_score)
    assert result.relative_improvement == pytest.approx(expected * 100)
    assert result.relative_improvement == pytest.approx(90.6, abs=0.1)
    # As MLRC-Bench reports them: main.py's own timing, and the method's class
    # against the baseline's in ast statements.
    assert result.runtime_seconds == test.metrics["runtime"] > 0
    assert result.runtime_change_percent == pytest.approx(
        (result.runtime_seconds - curve.baseline_runtime_seconds)
        / curve.baseline_runtime_seconds
        * 100
    )
    assert (result.lloc, result.baseline_lloc) == (9, 9)
    assert result.task_version == 1 and result.trial == 1
    with pytest.raises(ExperimentRefused, match="already evaluated"):
        objective_test_queue(agent=agent, objective=curve)


def test_only_the_best_dev_run_may_be_sent_to_test(curve):
    agent = AgentFactory()
    baseline = run(submit(curve, agent, example_files("baseline")))
    run(submit(curve, agent, example_files("knn")))

    with pytest.raises(ExperimentRefused, match="only the agent's best dev run"):
        experiment_queue(submission=baseline.submission, phase="test")


def test_the_baseline_method_scores_zero_and_the_shipped_scores_hold(curve):
    agent = AgentFactory()
    run(submit(curve, agent, example_files("baseline")))

    test = experiment_execute(run_id=objective_test_queue(agent=agent, objective=curve).pk)

    assert test.score == pytest.approx(curve.baseline_score)
    assert ObjectiveResult.objects.get(agent=agent).relative_improvement == pytest.approx(
        0, abs=1e-6
    )


# --- the site's own format --------------------------------------------------------


@pytest.fixture
def site_data(experiment_settings, experiment_root) -> Path:
    data = experiment_root / "site-curve"
    subprocess.run([sys.executable, str(SITE_TASK / "generate_data.py"), str(data)], check=True)
    (data / "eval").mkdir()
    shutil.copy2(SITE_TASK / "evaluate.py", data / "eval" / "evaluate.py")
    for folder in [data, *data.rglob("*")]:
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    return data


EVAL_COMMAND = (
    "python3 /task/evaluate.py --predictions /predictions/predictions.csv "
    "--labels /private/labels.csv --out metrics.json"
)


def site_task(site_data: Path, *, slug: str, metric: str, higher: bool, baseline, human):
    call_command(
        "objective_task",
        "add",
        f"--slug={slug}",
        f"--title=Curve fitting, scored by {metric}",
        f"--metric={metric}",
        "--higher-is-better" if higher else "--lower-is-better",
        f"--baseline={baseline}",
        f"--human={human}",
        f"--eval-command={EVAL_COMMAND}",
        f"--eval-dir={site_data / 'eval'}",
        f"--dev-data={site_data / 'dev'}",
        f"--test-data={site_data / 'test'}",
        stdout=StringIO(),
    )
    return ObjectiveTask.objects.get(task__slug=slug)


def site_method(name: str) -> dict[str, str]:
    folder = SITE_TASK / "methods" / name
    return {path.name: path.read_text() for path in folder.iterdir() if path.is_file()}


@pytest.fixture
def site_curve(site_data) -> ObjectiveTask:
    return site_task(
        site_data,
        slug="neurips2025_objective_curve_fitting_site",
        metric="rmse",
        higher=False,
        baseline=0.6993385878509479,
        human=0.2109005774913717,
    )


def test_relative_improvement_for_a_higher_is_better_metric(site_curve, site_data):
    curve = site_curve
    r2 = site_task(
        site_data,
        slug="neurips2025_objective_curve_fitting_r2",
        metric="r2",
        higher=True,
        baseline=0.15697684509123477,
        human=0.9233309544593186,
    )
    agent = AgentFactory(name="two-task-agent")
    for objective in (curve, r2):
        baseline = run(submit(objective, agent, site_method("baseline")))
        knn = run(submit(objective, agent, site_method("knn")))
        experiment_execute(run_id=objective_test_queue(agent=agent, objective=objective).pk)
    assert knn.score > baseline.score  # higher R² is better

    result = ObjectiveResult.objects.get(agent=agent, objective=r2)
    assert result.test_run.submission_id == knn.submission_id
    assert result.test_score is not None
    expected = (result.test_score - 0.15697684509123477) / (
        0.9233309544593186 - 0.15697684509123477
    )
    assert result.relative_improvement == pytest.approx(expected * 100)
    assert result.relative_improvement == pytest.approx(95.2, abs=0.1)

    (row,) = objective_leaderboard_rows()
    assert row.agent_name == "two-task-agent"
    assert [cell.task_slug for cell in row.tasks] == sorted([curve.task.slug, r2.task.slug])
    assert row.mean_relative_improvement == pytest.approx(
        (row.tasks[0].relative_improvement + row.tasks[1].relative_improvement) / 2
    )
    assert all((cell.lloc or 0) > 0 and (cell.runtime_seconds or 0) > 0 for cell in row.tasks)


def test_a_site_format_dev_run_sees_only_its_public_half(site_curve, site_data):
    files = site_method("knn")
    files["method.py"] = (
        "import os\n"
        "seen = sorted(os.listdir(os.environ['DATA_DIR']))\n"
        "tried = [os.path.exists(p) for p in ('/private/labels.csv', "
        f"{str(site_data / 'test')!r})]\n"
        "os.makedirs(os.environ['OUTPUT_DIR'], exist_ok=True)\n"
        "open(os.environ['OUTPUT_DIR'] + '/seen.json', 'w').write(repr((seen, tried)))\n"
    ) + files["method.py"]
    dev = run(submit(site_curve, AgentFactory(), files))

    assert output_text(dev, "output/seen.json") == "(['inputs.csv', 'train.csv'], [False, False])"
    assert dev.metrics["n"] == 200


def test_an_objective_task_whose_human_does_not_beat_the_baseline_is_refused(site_curve):
    curve = site_curve
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


def test_a_method_that_writes_no_predictions_fails_with_the_evaluations_reason(site_curve):
    curve = site_curve
    submission = submit(curve, AgentFactory(), {"run.sh": "echo 'I predict nothing'\n"})
    done = experiment_execute(run_id=experiment_queue(submission=submission, phase="dev").pk)

    assert done.status == ExperimentStatus.FAILED
    assert "evaluation failed" in done.reason
    assert done.score is None
    assert "cannot read the predictions" in done.log.read().decode()


def test_a_method_cannot_point_the_evaluation_at_the_labels(site_curve):
    curve = site_curve
    # A link in its output to where the evaluation will find the labels.
    cheat = "mkdir -p output && ln -s /private/labels.csv output/predictions.csv\n"
    submission = submit(curve, AgentFactory(), {"run.sh": cheat})

    done = experiment_execute(run_id=experiment_queue(submission=submission, phase="dev").pk)

    assert done.status == ExperimentStatus.FAILED and done.score is None
    assert "cannot read the predictions" in done.log.read().decode()
