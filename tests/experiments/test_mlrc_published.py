"""MLRC-Bench's product-recommendation task (KDD Cup 2023) as MLRC-Bench
publishes it (../shared/mlrc/product-recommendation): imported under its venue,
its environment (numpy, pandas, tqdm) built with pip, a method run on dev and
on test through a real gpu worker and bubblewrap, and both scores checked
against the task's own main.py run the MLRC-Bench way."""

import json
import shutil
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from experiments import mlrc
from experiments.environments import environment_state
from experiments.errors import ExperimentRefused
from experiments.models import (
    EnvironmentStatus,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveResult,
    ObjectiveTask,
    TaskEnvironment,
)
from experiments.queue import experiment_queue
from submissions.models import Stage
from tests.benchmark.factories import AgentFactory
from tests.experiments.factories import submission_with_files
from tests.support.waiting import wait_until

from .conftest import PUBLISHED

SLUG = "kdd2023_product_recommendation"

# In a parallel run, these tests (and test_forgery.py's of the published task) on
# one worker: the session's environment folder (env_root,
# tests/experiments/conftest.py) is then built once there. Not the transactional
# test: a group holds one kind of test only (tests/support/groups.py); it adopts
# the environment where it finds it built, or builds it.
ONE_ENVIRONMENT = pytest.mark.xdist_group("mlrc-published-environment")
BASELINE, HUMAN = 0.08039049179, 0.41208  # the published test MRRs (the task's README)


def import_published(*extra: str) -> str:
    out = StringIO()
    call_command(
        "objective_task",
        "import-mlrc",
        str(PUBLISHED),
        f"--slug={SLUG}",
        "--metric=MRR",
        "--higher-is-better",
        f"--baseline={BASELINE}",
        f"--human={HUMAN}",
        "--time-limit=300",
        *extra,
        stdout=out,
    )
    return out.getvalue()


def env_build() -> str:
    out = StringIO()
    call_command("objective_task", "env-build", SLUG, stdout=out)
    return out.getvalue()


def mlrc_bench_score(objective: ObjectiveTask, method: str, phase: str, work: Path) -> float:
    """The task's own main.py, unchanged, the MLRC-Bench way (README and launch
    script): in a fresh copy of env/ with the task's scripts/ linked beside it;
    for test, `cp -r ../scripts/test_data/* data/; cp ../scripts/test_constants.py
    constants.py`; with the task's environment."""
    work.mkdir()
    (work / "scripts").symlink_to(PUBLISHED / "scripts")
    work = work / "env"
    shutil.copytree(PUBLISHED / "env", work)
    if phase == "test":
        for path in (PUBLISHED / "scripts" / "test_data").iterdir():
            shutil.copy(path, work / "data" / path.name)
        shutil.copy(PUBLISHED / "scripts" / "test_constants.py", work / "constants.py")
    python = TaskEnvironment.objects.get().python
    subprocess.run(
        [python, "main.py", "-m", method, "-p", phase],
        cwd=work,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(mlrc.SHIM_ROOT), "MLRC_TASK": SLUG},
        check=True,
        capture_output=True,
        timeout=300,
    )
    evals = json.loads((work / "output" / "idea_evals.json").read_text())
    return evals["implementations"][-1]["performance"]


@ONE_ENVIRONMENT
@pytest.mark.django_db
def test_the_published_task_imports_under_its_venue_and_builds_its_environment(published, client):
    assert "created (version 1)" in import_published()
    objective = ObjectiveTask.objects.select_related("task").get(task__slug=SLUG)
    assert (objective.task.conference, objective.task.year, objective.task.venue) == (
        "kdd",
        2023,
        "KDD",
    )
    assert objective.environment_requirements == ["numpy", "pandas", "tqdm"]
    assert (objective.metric_min, objective.metric_max) == (0.0, 1.0)
    version = Path(objective.dev_data_dir).parent
    # The test constants come with the version; the label files only the scoring step sees.
    assert (version / "test_constants.py").read_text().startswith("train_data_path")
    assert objective.label_files == list(mlrc.DEFAULT_LABEL_PATTERNS)

    # Not built: the page, the API and a run say so.
    assert environment_state(objective.environment_requirements)["status"] == "missing"
    answer = client.get(f"/api/objective/tasks/{SLUG}/").json()
    assert answer["environment"]["status"] == "missing"
    assert answer["environment"]["requirements"] == ["numpy", "pandas", "tqdm"]
    page = client.get(f"/tasks/{SLUG}/").content.decode()
    assert "KDD 2023" in page and "objective_task env-build kdd2023_product_recommendation" in page
    submission = submission_with_files(
        {"method_name.txt": "my_method\n", "methods/README.md": "baseline"},
        agent=AgentFactory(),
        task=objective.task,
        stage=Stage.METHOD,
    )
    with pytest.raises(ExperimentRefused, match="environment of kdd2023_product_recommendation"):
        experiment_queue(submission=submission, phase="dev")

    assert "ready at" in env_build()
    environment = TaskEnvironment.objects.get()
    assert environment.status == EnvironmentStatus.READY
    assert any(line.lower().startswith("pandas==") for line in environment.packages)
    answer = client.get(f"/api/objective/tasks/{SLUG}/").json()["environment"]
    assert answer["status"] == "ready" and answer["packages"] == environment.packages
    env_build()  # the same spec again: reused, not rebuilt (its time: perf/mlrc_environments.py)
    assert TaskEnvironment.objects.get().built_at == environment.built_at
    assert experiment_queue(submission=submission, phase="dev").status == ExperimentStatus.QUEUED


@ONE_ENVIRONMENT
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"scripts/environment.yml": "name: x\ndependencies:\n  - numpy\n - pandas\n  - tqdm\n"},
            "environment.yml line 4",
        ),
        ({"scripts/requirements.txt": "numpy\n-e git+https://x\n"}, "line 2: option"),
    ],
    ids=["yaml", "requirements"],
)
def test_an_environment_file_that_cannot_be_read_names_the_line(
    published, tmp_path, files, message
):
    folder = tmp_path / "task"
    shutil.copytree(PUBLISHED, folder)
    (folder / "scripts" / "environment.yml").unlink()
    for relative, text in files.items():
        (folder / relative).write_text(text)

    with pytest.raises(CommandError, match=message):
        import_published_from(folder)
    assert not ObjectiveTask.objects.exists()


def import_published_from(folder: Path) -> None:
    call_command(
        "objective_task",
        "import-mlrc",
        str(folder),
        f"--slug={SLUG}",
        "--metric=MRR",
        "--higher-is-better",
        f"--baseline={BASELINE}",
        f"--human={HUMAN}",
        stdout=StringIO(),
    )


@ONE_ENVIRONMENT
@pytest.mark.django_db
def test_a_requirement_pip_cannot_install_is_named_and_nothing_is_left(published, tmp_path):
    folder = tmp_path / "task"
    shutil.copytree(PUBLISHED, folder)
    (folder / "scripts" / "environment.yml").write_text(
        "dependencies:\n  - pip\n  - pip:\n      - mlrbench-no-such-package-xyz==0.0.1\n"
    )
    import_published_from(folder)

    with pytest.raises(CommandError, match="mlrbench-no-such-package-xyz"):
        env_build()
    environment = TaskEnvironment.objects.get()
    assert environment.status == EnvironmentStatus.FAILED
    assert "mlrbench-no-such-package-xyz" in environment.error
    assert not Path(environment.path).exists()


@ONE_ENVIRONMENT
@pytest.mark.django_db
def test_an_external_test_phase_is_recorded_with_its_source(published, tmp_path):
    folder = tmp_path / "task"
    shutil.copytree(PUBLISHED, folder)
    shutil.rmtree(folder / "scripts" / "test_data")
    with pytest.raises(CommandError, match="no scripts/test_data folder"):
        import_published_from(folder)
    call_command(
        "objective_task",
        "import-mlrc",
        str(folder),
        f"--slug={SLUG}",
        "--metric=MRR",
        "--higher-is-better",
        f"--baseline={BASELINE}",
        f"--human={HUMAN}",
        "--test-phase=external",
        stdout=StringIO(),
    )
    objective = ObjectiveTask.objects.get(task__slug=SLUG)
    agent = AgentFactory(name="external-agent")
    submission = submission_with_files(
        {"method_name.txt": "my_method\n", "methods/README.md": "x"},
        agent=agent,
        task=objective.task,
        stage=Stage.METHOD,
    )
    ExperimentRun.objects.create(
        submission=submission,
        phase="dev",
        command="python main.py -m my_method -p dev",
        status=ExperimentStatus.SUCCEEDED,
        score=0.09,
        time_limit_seconds=60,
        task_version=1,
        started_at="2026-01-01T00:00Z",
        finished_at="2026-01-01T00:01Z",
        metrics={"method_complexity": 40, "base_complexity": 40},
    )
    with pytest.raises(CommandError, match="above the highest possible MRR"):
        call_command(
            "objective_task",
            "test-score",
            f"--submission={submission.pk}",
            "--score=1.5",
            "--source=Kaggle",
            stdout=StringIO(),
        )

    out = StringIO()
    call_command(
        "objective_task",
        "test-score",
        f"--submission={submission.pk}",
        "--score=0.2",
        "--source=Kaggle private leaderboard, 2026-01-02",
        stdout=out,
    )

    result = ObjectiveResult.objects.get(agent=agent)
    assert (result.test_run, result.test_score) == (None, 0.2)
    assert result.test_score_source == "Kaggle private leaderboard, 2026-01-02"
    from experiments.selectors import objective_leaderboard_rows

    (row,) = objective_leaderboard_rows()
    (cell,) = row.tasks
    assert cell.test_score_source == "Kaggle private leaderboard, 2026-01-02"
    assert cell.relative_improvement == pytest.approx((0.2 - BASELINE) / (HUMAN - BASELINE) * 100)


# --- through the worker --------------------------------------------------------


def finished(run: ExperimentRun, timeout: float = 400) -> ExperimentRun:
    def ended() -> bool:
        run.refresh_from_db()
        return run.is_finished

    wait_until(ended, timeout=timeout, interval=0.5, message=f"run {run.pk} to finish")
    return run


@pytest.mark.backends
@pytest.mark.django_db(transaction=True)
def test_the_published_task_runs_on_dev_and_test_as_mlrc_bench_scores_it(
    published, celery_worker_process, tmp_path, client
):
    import_published()
    env_build()
    objective = ObjectiveTask.objects.select_related("task").get(task__slug=SLUG)
    celery_worker_process("gpu", env=published.worker_env)
    agent = AgentFactory(name="kdd-agent")
    submission = submission_with_files(
        {"method_name.txt": "my_method\n", "methods/README.md": "the baseline"},
        agent=agent,
        task=objective.task,
        stage=Stage.METHOD,
    )
    dev = finished(experiment_queue(submission=submission, phase="dev"))
    assert dev.status == ExperimentStatus.SUCCEEDED, dev.reason
    test = finished(experiment_queue(submission=submission, phase="test"))
    assert test.status == ExperimentStatus.SUCCEEDED, test.reason

    expected_dev = mlrc_bench_score(objective, "my_method", "dev", tmp_path / "dev")
    expected_test = mlrc_bench_score(objective, "my_method", "test", tmp_path / "test")
    assert dev.score == pytest.approx(expected_dev, abs=1e-12)
    assert test.score == pytest.approx(expected_test, abs=1e-12)
    # The test score is the test data's, not the dev data's again.
    assert test.score != dev.score
    result = ObjectiveResult.objects.get(agent=agent)
    assert result.relative_improvement == pytest.approx(
        (expected_test - BASELINE) / (HUMAN - BASELINE) * 100
    )
    analyses = client.get("/api/objective/analyses/", {"task": SLUG}).json()
    (row,) = analyses["agents"]
    assert row["best_of_k"] == [
        {"k": 1, "n": 1, "share": 1.0 if expected_test > BASELINE else 0.0, "why_empty": ""}
    ]
    assert row["absolute_improvement"] == pytest.approx(expected_test - BASELINE)
    assert client.get("/api/objective/analyses/").status_code == 400
    # It ran with the task's environment, not the host's Python.
    assert f"(python: {TaskEnvironment.objects.get().python};" in dev.log.read().decode()


@ONE_ENVIRONMENT
@pytest.mark.django_db
def test_venues_are_for_objective_tasks_and_a_bad_slug_says_the_rule(published):
    from django.db import IntegrityError, transaction

    from benchmark.models import Task, TaskKind

    with pytest.raises(CommandError, match=r"slug 'KDD2023_x' is not <venue><year>_<name>"):
        call_command(
            "objective_task",
            "import-mlrc",
            str(PUBLISHED),
            "--slug=KDD2023_x",
            "--metric=MRR",
            "--higher-is-better",
            f"--baseline={BASELINE}",
            f"--human={HUMAN}",
            stdout=StringIO(),
        )
    # MLR-Bench's workshop tasks keep their rule: a venue slug is an objective task's only.
    with pytest.raises(IntegrityError), transaction.atomic():
        Task.objects.create(
            slug="kdd2023_workshop",
            title="x",
            conference="kdd",
            year=2023,
            description="# x\n",
            kind=TaskKind.OPEN_ENDED,
        )
    Task.objects.create(
        slug="cvpr2024_challenge",
        title="x",
        conference="cvpr",
        year=2024,
        description="# x\n",
        kind=TaskKind.OBJECTIVE,
    )
