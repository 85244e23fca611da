"""MLRC-Bench task folders as they are published: a tiny task built here in
that exact layout (its main.py imports MLAgentBench.utils) is imported with
`objective_task import-mlrc`, method archives are refused or run on dev and
test, and every bad input says what went wrong instead of giving a score."""

import json
import zipfile
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from experiments.models import (
    ExperimentRun,
    ExperimentStatus,
    ObjectiveFormat,
    ObjectiveResult,
    ObjectiveTask,
)
from experiments.queue import experiment_queue, objective_test_queue
from experiments.runner import experiment_execute
from submissions.intake import IntakeRefused, submission_intake
from submissions.models import ArtifactKind, Stage, Submission, SubmissionSource
from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.experiments.factories import submission_with_files
from tests.support.waiting import wait_until

SLUG = "neurips2025_tiny_mlrc"
BASELINE, HUMAN = 88.0, 99.0  # the baseline's and the top human's test scores
MAIN = """\
import argparse
import time
from decimal import Decimal

from MLAgentBench.constants import ALL_BASE_PERFORMANCE
from MLAgentBench.utils import save_evals

from evaluation import evaluate_model, get_score
from methods import all_method_handlers

TASK_NAME = "tiny"
DEFAULT_METHOD_NAME = "my_method"

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-m", "--method", type=str, default=DEFAULT_METHOD_NAME)
    parser.add_argument("-p", "--phase", type=str, default="dev", choices=["dev", "test"])
    args = parser.parse_args()
    print("baseline as MLAgentBench.constants has it:", ALL_BASE_PERFORMANCE)
    handlers = all_method_handlers()
    method = handlers[args.method](args.method)
    start = time.time()
    evaluate_model(method, args.phase)
    score = get_score(method, args.phase)
    runtime = time.time() - start
    base_class = handlers[DEFAULT_METHOD_NAME]
    method_class = handlers[args.method]
    save_evals(task_name=TASK_NAME, method_name=args.method, method_class=method_class,
               base_class=base_class, score=score, phase=args.phase, runtime=runtime)
"""
EVALUATION = """\
import json
import os

from constants import DATA_DIR


def evaluate_model(method, phase):
    with open(os.path.join(DATA_DIR, f"{phase}.json")) as handle:
        inputs = json.load(handle)["inputs"]
    os.makedirs("output", exist_ok=True)
    with open(f"output/{phase}_answer.json", "w") as handle:
        json.dump({"answer": method.run(inputs)}, handle)


def get_score(method, phase):
    with open(os.path.join(DATA_DIR, f"{phase}_target.json")) as handle:
        target = json.load(handle)["target"]
    with open(f"output/{phase}_answer.json") as handle:
        answer = json.load(handle)["answer"]
    return 100.0 - abs(target - answer)
"""
BASE_METHOD = """\
class BaseMethod:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name

    def run(self, inputs):
        raise NotImplementedError
"""
MY_METHOD = """\
from methods.BaseMethod import BaseMethod


class MyMethod(BaseMethod):
    def run(self, inputs):
        return max(inputs)
"""
METHODS_INIT = """\
from methods.MyMethod import MyMethod


def all_method_handlers():
    return {"my_method": MyMethod}
"""
TASK_FILES = {
    "env/main.py": MAIN,
    "env/evaluation.py": EVALUATION,
    "env/constants.py": 'DATA_DIR = "data"\n',
    "env/methods/__init__.py": METHODS_INIT,
    "env/methods/BaseMethod.py": BASE_METHOD,
    "env/methods/MyMethod.py": MY_METHOD,
    # Dev: max(inputs) = 4 against a target of 10 gives the baseline 94.
    "env/data/dev.json": '{"inputs": [1, 2, 3, 4]}',
    "env/data/dev_target.json": '{"target": 10}',
    "scripts/research_problem.txt": "# Tiny task\n\nGuess the target from the inputs.\n",
    "scripts/read_only_files.txt": "main.py\nevaluation.py\nconstants.py\nmethods/BaseMethod.py\n"
    "methods/MyMethod.py\ndata/*\n",
    # Test: max(inputs) = 8 against 20 gives the baseline 88.
    # MLRC-Bench copies scripts/test_data/* into data/ for the test phase.
    "scripts/test_data/test.json": '{"inputs": [2, 4, 6, 8]}',
    "scripts/test_data/test_target.json": '{"target": 20}',
    "scripts/prepare.py": "# The data ship with the folder; nothing to download.\n",
    "scripts/environment.yml": "name: tiny\ndependencies:\n  - python>=3.10\n",
}


def method_archive_files(name: str, body: str, *, method_name: str | None = None) -> dict:
    """An agent's method: a class in methods/, registered next to the baseline."""
    klass = "".join(part.title() for part in name.split("_"))
    files = {
        f"methods/{klass}.py": f"from methods.BaseMethod import BaseMethod\n\n\n"
        f"class {klass}(BaseMethod):\n    def run(self, inputs):\n"
        + "".join(f"        {line}\n" for line in body.strip().splitlines()),
        "methods/__init__.py": f"from methods.MyMethod import MyMethod\n"
        f"from methods.{klass} import {klass}\n\n\ndef all_method_handlers():\n"
        f'    return {{"my_method": MyMethod, "{name}": {klass}}}\n',
    }
    if method_name is not None:
        files["method_name.txt"] = method_name + "\n"
    return files


DOUBLE_MAX = "return 2 * max(inputs)"  # dev 8 against 10: 98; test 16 against 20: 96


def build_task(root: Path, files: dict[str, str] = TASK_FILES) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def import_mlrc(folder: Path, *extra: str, human: float = HUMAN) -> str:
    out = StringIO()
    call_command(
        "objective_task",
        "import-mlrc",
        str(folder),
        f"--slug={SLUG}",
        "--metric=closeness",
        "--higher-is-better",
        f"--baseline={BASELINE}",
        f"--human={human}",
        "--baseline-runtime=0.5",
        "--title=Tiny MLRC-Bench task",
        # Its label files: only the scoring step sees them.
        "--labels=data/*_target.json",
        *extra,
        stdout=out,
    )
    return out.getvalue()


@pytest.fixture
def task_folder(experiment_root) -> Path:
    return build_task(experiment_root / "tiny-task")


@pytest.fixture
def tiny(experiment_settings, task_folder) -> ObjectiveTask:
    import_mlrc(task_folder)
    return ObjectiveTask.objects.select_related("task").get(task__slug=SLUG)


def zip_archive(folder: Path, files: dict[str, str], name="method.zip") -> Path:
    path = folder / name
    with zipfile.ZipFile(path, "w") as archive:
        for relative, text in files.items():
            archive.writestr(relative, text)
    return path


def upload(objective, agent, files, tmp_path):
    return submission_intake(
        agent=agent,
        task=objective.task,
        stage=Stage.METHOD,
        archive=zip_archive(tmp_path, files),
        archive_name="method.zip",
        uploader=None,
        source=SubmissionSource.API,
    )


def dev_run(objective, files, *, agent=None, **queue):
    submission = submission_with_files(
        files, agent=agent or AgentFactory(), task=objective.task, stage=Stage.METHOD
    )
    return experiment_execute(
        run_id=experiment_queue(submission=submission, phase="dev", **queue).pk
    )


def improvement(score: float) -> float:
    return (score - BASELINE) / (HUMAN - BASELINE) * 100


# --- import --------------------------------------------------------------------


@pytest.mark.django_db
def test_a_task_folder_imports_once_and_a_changed_one_is_a_new_version(
    experiment_settings, task_folder
):
    assert "created (version 1)" in import_mlrc(task_folder)
    objective = ObjectiveTask.objects.get(task__slug=SLUG)
    assert objective.format == ObjectiveFormat.MLRC
    assert objective.task.description.startswith("# Tiny task")
    assert objective.task.title == "Tiny MLRC-Bench task"
    assert objective.read_only_files == [
        "main.py",
        "evaluation.py",
        "constants.py",
        "methods/BaseMethod.py",
        "methods/MyMethod.py",
        "data/*",
    ]
    assert (objective.baseline_runtime_seconds, objective.version) == (0.5, 1)
    env, test_data = Path(objective.dev_data_dir), Path(objective.test_data_dir)
    assert (env / "main.py").read_text() == MAIN
    assert (test_data / "test_target.json").is_file()
    # The test data are kept apart from env/, which every run copies.
    assert not (env / "data" / "test_target.json").exists()
    digest, updated = objective.source_sha256, objective.updated_at

    assert "unchanged (version 1)" in import_mlrc(task_folder)
    objective.refresh_from_db()
    assert (objective.version, objective.source_sha256, objective.updated_at) == (
        1,
        digest,
        updated,
    )

    (task_folder / "env" / "data" / "dev_target.json").write_text('{"target": 11}')
    assert "new version (version 2)" in import_mlrc(task_folder)
    objective.refresh_from_db()
    assert objective.version == 2 and objective.source_sha256 != digest
    assert (Path(objective.dev_data_dir) / "data" / "dev_target.json").read_text() == (
        '{"target": 11}'
    )
    # The first version's copy stays for the runs that came from it.
    assert (env / "data" / "dev_target.json").read_text() == '{"target": 10}'


@pytest.mark.django_db
def test_a_folder_missing_parts_is_refused_with_every_part_named(experiment_settings, tmp_path):
    files = {
        path: text
        for path, text in TASK_FILES.items()
        if path not in ("env/main.py", "scripts/read_only_files.txt")
        and not path.startswith("scripts/test_data/")
    }
    folder = build_task(tmp_path / "broken", files)

    with pytest.raises(CommandError) as error:
        import_mlrc(folder, human=80.0)

    message = str(error.value)
    assert "the task folder has no env/main.py file" in message
    assert "the task folder has no scripts/read_only_files.txt file" in message
    assert "the task folder has no scripts/test_data folder" in message
    assert "must be better than the baseline" in message
    assert not ObjectiveTask.objects.filter(task__slug=SLUG).exists()


# --- intake --------------------------------------------------------------------


@pytest.mark.django_db
def test_an_archive_that_changes_a_read_only_file_is_refused_and_says_which(tiny, tmp_path):
    files = method_archive_files("double_max", DOUBLE_MAX, method_name="double_max")
    files["methods/BaseMethod.py"] = BASE_METHOD + "\n# improved\n"

    with pytest.raises(IntakeRefused, match=r"read-only file methods/BaseMethod\.py"):
        upload(tiny, AgentFactory(), files, tmp_path)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"method_name.txt": "my_method\n", "notes.py": "x = 1\n"}, "holds a methods/ folder"),
        (
            {
                **method_archive_files("a_one", "return 1"),
                "methods/__init__.py": METHODS_INIT.replace(
                    '"my_method": MyMethod', '"my_method": MyMethod, "a": MyMethod, "b": MyMethod'
                ),
            },
            r"does not add exactly one method .*found: a, b",
        ),
        (
            method_archive_files("shell", "return 1", method_name="x; rm -rf /"),
            "method_name.txt must hold one method name",
        ),
        (
            {**method_archive_files("x", "return 1", method_name="x"), "trial.txt": "first"},
            "trial.txt must hold a trial number",
        ),
        (
            method_archive_files("double_max", DOUBLE_MAX, method_name="doubel_max"),
            "method_name.txt names doubel_max, which all_method_handlers.. does not return; "
            "the methods this task knows: double_max, my_method",
        ),
    ],
    ids=["no-methods-folder", "no-method-name", "unsafe-method-name", "bad-trial", "unknown-name"],
)
def test_a_method_archive_without_a_runnable_method_is_refused(tiny, tmp_path, files, message):
    with pytest.raises(IntakeRefused, match=message):
        upload(tiny, AgentFactory(), files, tmp_path)


@pytest.mark.django_db
def test_a_method_for_an_open_ended_task_is_refused(experiment_settings, tmp_path):
    open_ended = TaskFactory(slug="iclr2025_open_ended")
    with pytest.raises(IntakeRefused, match="the method stage is for objective tasks") as refused:
        submission_intake(
            agent=AgentFactory(),
            task=open_ended,
            stage=Stage.METHOD,
            archive=zip_archive(tmp_path, method_archive_files("x", "return 1", method_name="x")),
            archive_name="method.zip",
            uploader=None,
            source=SubmissionSource.API,
        )
    assert "iclr2025_open_ended is an open-ended task" in refused.value.message
    assert not Submission.objects.exists()


@pytest.mark.django_db
def test_the_method_defaults_to_the_one_the_archive_adds(tiny, tmp_path):
    submission = upload(
        tiny, AgentFactory(), method_archive_files("double_max", DOUBLE_MAX), tmp_path
    )

    run = experiment_queue(submission=submission, phase="dev")

    assert run.command == "python main.py -m double_max -p dev"
    assert (run.task_version, run.trial) == (1, 1)


# --- runs ----------------------------------------------------------------------


@pytest.mark.django_db
def test_a_dev_run_scores_the_method_and_a_test_run_evaluates_it_once(tiny):
    agent = AgentFactory()
    baseline = dev_run(
        tiny, {"method_name.txt": "my_method\n", "methods/README.md": "x"}, agent=agent
    )
    ours = dev_run(tiny, method_archive_files("double_max", DOUBLE_MAX), agent=agent)
    assert (baseline.status, baseline.score) == (ExperimentStatus.SUCCEEDED, 94.0)
    assert (ours.status, ours.score) == (ExperimentStatus.SUCCEEDED, 98.0), ours.reason
    assert ours.metrics["method_complexity"] == 3 and ours.metrics["base_complexity"] == 3
    log = ours.log.read().decode()
    # main.py's two halves, each in its own sandbox.
    assert "$ python /opt/mlrc/mlrc_method.py -m double_max -p dev" in log
    assert "$ python /opt/mlrc/mlrc_score.py -m double_max -p dev" in log

    test = experiment_execute(run_id=objective_test_queue(agent=agent, objective=tiny).pk)

    assert test.submission_id == ours.submission_id and test.score == 96.0
    result = ObjectiveResult.objects.get(objective=tiny, agent=agent)
    assert result.test_score == 96.0
    assert result.relative_improvement == improvement(96.0)
    assert result.runtime_seconds is not None
    assert result.runtime_change_percent == (result.runtime_seconds - 0.5) / 0.5 * 100
    assert (result.lloc, result.baseline_lloc, result.task_version) == (3, 3, 1)


@pytest.mark.django_db
def test_a_dev_run_has_the_scripts_beside_it_but_no_labels_and_no_test_data(tiny):
    # MLRC-Bench's launch links the task's scripts/ beside env/ in every phase;
    # a task whose code does not read ../scripts/test_data/ gets it in the test
    # phase only, and the label files (*_target.json) only the scoring step sees.
    look = (
        "import os\n"
        "labels = [os.path.join(d, f) for d, _, fs in os.walk('/') if not d.startswith(('/proc', "
        "'/sys', '/usr'))\n          for f in fs if f.endswith('_target.json')]\n"
        "in_data = [p for p in ('data/test.json', 'data/test_target.json', "
        f"{tiny.test_data_dir!r}) if os.path.exists(p)]\n"
        "beside = os.path.exists('../scripts/research_problem.txt')\n"
        "in_data += [p for p in ('../scripts/test_data', '../scripts/test_constants.py') "
        "if os.path.exists(p)]\n"
        "return 2 * max(inputs) + 1000 * len(labels + in_data) + (0 if beside else 500)"
    )
    run = dev_run(tiny, method_archive_files("look", look, method_name="look"))

    assert run.status == ExperimentStatus.SUCCEEDED, run.reason
    assert run.score == 98.0  # it found the scripts and nothing else


@pytest.mark.django_db
def test_read_only_files_are_restored_from_the_task_before_a_run(tiny):
    # Past the intake (an archive imported before the file became read-only).
    files = method_archive_files("double_max", DOUBLE_MAX, method_name="double_max")
    files["methods/BaseMethod.py"] = "raise SystemExit('tampered')\n"

    run = dev_run(tiny, files)

    assert (run.status, run.score) == (ExperimentStatus.SUCCEEDED, 98.0)
    assert "read-only methods/BaseMethod.py: the task's own copy is used" in run.log.read().decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        ("return 1 / 0", ExperimentStatus.FAILED, "ZeroDivisionError: division by zero"),
        ("import os\nos._exit(0)", ExperimentStatus.COULD_NOT_RUN, "saved no score"),
        ('return float("nan")', ExperimentStatus.COULD_NOT_RUN, "(nan) is not a finite number"),
        ('return "ten"', ExperimentStatus.FAILED, "TypeError"),
        ("while True:\n    pass", ExperimentStatus.TIMED_OUT, "$ python main.py -m bad -p dev"),
    ],
    ids=["crash", "no-score", "nan-score", "wrong-type", "time-out"],
)
def test_a_run_without_a_usable_score_says_why_and_gets_none(tiny, body, status, reason):
    run = dev_run(tiny, method_archive_files("bad", body, method_name="bad"), time_limit_seconds=5)

    assert run.status == status
    assert run.score is None
    assert reason in run.reason and "the log ends:" in run.reason
    assert not ObjectiveResult.objects.exists()


# A method's own process is not trusted with its score (issue 32, item 11): each
# forgery below gave the method the score it wanted before the two-step runs.
# Read-only files are writable at run time (MLRC-Bench's meaning: the agent may
# not edit them); the scoring step runs the task's pristine copy all the same.
APPEND_TO_READ_ONLY = """\
for path in ("evaluation.py", "main.py", "constants.py", "methods/BaseMethod.py"):
    with open(path, "a") as handle:
        handle.write("\\nget_score = lambda method, phase: 1000.0\\nDATA_DIR = '/'\\n")
return 2 * max(inputs)"""
READ_THE_LABELS = """\
import json, os
for path in ("data/dev_target.json", "/work/data/dev_target.json"):
    if os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)["target"]
return 2 * max(inputs)"""
SAVE_A_FORGED_SCORE = """\
import json, os, sys
main = sys.modules.get("__main__")
for module in (main, sys.modules.get("evaluation")):
    if module is not None:
        module.get_score = lambda method, phase: 1000.0
os.makedirs("output", exist_ok=True)
with open("output/idea_evals.json", "w") as handle:
    json.dump({"implementations": [{"phase": "dev", "performance": 1000.0}]}, handle)
return 2 * max(inputs)"""


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [APPEND_TO_READ_ONLY, READ_THE_LABELS, SAVE_A_FORGED_SCORE],
    ids=["append-to-read-only-files", "read-the-labels", "forge-the-saved-score"],
)
def test_a_method_cannot_forge_its_score(tiny, body):
    run = dev_run(tiny, method_archive_files("forger", body, method_name="forger"))

    # The honest score of 2 * max(inputs): 98 (the labels would give 100, a
    # changed evaluation or saved score 1000).
    assert (run.status, run.score) == (ExperimentStatus.SUCCEEDED, 98.0), run.reason
    if body == APPEND_TO_READ_ONLY:
        assert "evaluation.py" in {output["path"] for output in run.outputs}  # it did change it


@pytest.mark.django_db
def test_a_score_outside_the_metrics_range_is_refused_with_the_reason(
    experiment_settings, task_folder
):
    import_mlrc(task_folder, "--metric-max=99.5")
    objective = ObjectiveTask.objects.get(task__slug=SLUG)

    run = dev_run(objective, method_archive_files("exact", "return 10", method_name="exact"))

    assert run.status == ExperimentStatus.COULD_NOT_RUN and run.score is None
    assert "the score 100 is above the highest possible closeness (99.5): refused" in run.reason


@pytest.mark.django_db
def test_trials_are_grouped_best_and_mean_and_share_beating_the_baseline(tiny, client):
    from experiments.selectors import objective_leaderboard_rows

    agent = AgentFactory(name="eight-trial-agent")
    # Trial 1 beats the baseline (test 96), trial 2 is the baseline (88), and
    # trial 3 crashes on test: it counts as the baseline's 0%.
    bodies = {1: DOUBLE_MAX, 2: "return max(inputs)", 3: "if inputs[0] == 2:\n    1 / 0\nreturn 9"}
    for trial, body in bodies.items():
        files = {**method_archive_files(f"m{trial}", body, method_name=f"m{trial}")}
        files["trial.txt"] = f"{trial}\n"
        assert dev_run(tiny, files, agent=agent).trial == trial
        experiment_execute(run_id=objective_test_queue(agent=agent, objective=tiny, trial=trial).pk)

    (row,) = objective_leaderboard_rows()
    (cell,) = row.tasks
    assert (cell.trials, cell.score, cell.task_version) == (3, 96.0, 1)
    assert cell.relative_improvement == cell.best_relative_improvement == improvement(96.0)
    assert cell.mean_relative_improvement_of_trials == (improvement(96.0) + 0.0 + 0.0) / 3
    assert cell.beat_baseline_share == 1 / 3
    # The site's best of k trials (not MLRC-Bench's Pass@k): trial 1 beats the baseline already.
    assert row.best_of_k == [{"k": k, "n": 1, "share": 1.0} for k in (1, 2, 3)]
    answer = client.get("/api/leaderboard/", {"stage": "objective"}).json()
    assert answer["rows"][0]["best_of_k"][2] == {"k": 3, "n": 1, "share": 1.0}
    cell_answer = answer["rows"][0]["tasks"][0]
    assert cell_answer["absolute_improvement"] == 96.0 - BASELINE
    assert cell_answer["percent_improvement"] == round((96.0 - BASELINE) / BASELINE * 100, 4)
    page = client.get("/leaderboard/", {"stage": "objective"}).content.decode()
    assert 'data-testid="best-of-k-table"' in page and "100% <span" in page


# --- through the worker --------------------------------------------------------


def finished(run: ExperimentRun, timeout: float = 120) -> ExperimentRun:
    def ended() -> bool:
        run.refresh_from_db()
        return run.is_finished

    wait_until(ended, timeout=timeout, interval=0.3, message=f"run {run.pk} to finish")
    return run


@pytest.mark.backends
@pytest.mark.django_db(transaction=True)
def test_an_uploaded_method_runs_on_a_gpu_worker_and_reaches_the_leaderboard(
    experiment_settings, celery_worker_process, task_folder, tmp_path, client
):
    celery_worker_process("gpu", env=experiment_settings.worker_env)
    import_mlrc(task_folder)
    objective = ObjectiveTask.objects.get(task__slug=SLUG)
    agent = AgentFactory(name="mlrc-agent")

    # Uploaded like any method: its dev run is queued when the intake finishes.
    submission = upload(
        objective,
        agent,
        method_archive_files("double_max", DOUBLE_MAX, method_name="double_max"),
        tmp_path,
    )
    dev = finished(ExperimentRun.objects.get(submission=submission, phase="dev"))
    assert (dev.status, dev.score) == (ExperimentStatus.SUCCEEDED, 98.0), dev.reason
    assert dev.worker_host

    out = StringIO()
    call_command("objective_task", "evaluate", f"--slug={SLUG}", stdout=out)
    assert "1 test run(s) queued" in out.getvalue()
    test = finished(ExperimentRun.objects.get(submission=submission, phase="test"))
    assert (test.status, test.score) == (ExperimentStatus.SUCCEEDED, 96.0), test.reason

    answer = client.get("/api/leaderboard/", {"stage": "objective"}).json()
    (row,) = answer["rows"]
    (cell,) = row["tasks"]
    assert row["agent"] == "mlrc-agent"
    assert (cell["task"], cell["metric"], cell["higher_is_better"]) == (SLUG, "closeness", True)
    assert cell["score"] == 96.0
    assert cell["relative_improvement"] == round(improvement(96.0), 4)
    assert cell["submission"] == submission.pk
    assert (cell["trials"], cell["task_version"], cell["beat_baseline_share"]) == (1, 1, 1.0)
    assert cell["best_relative_improvement"] == cell["mean_relative_improvement_of_trials"]
    page = client.get(f"/tasks/{SLUG}/").content.decode()
    assert "MLRC-Bench task folder, version 1" in page and f"{improvement(96.0):.1f}%" in page


def test_read_only_files_are_mounted_one_by_one_and_many_as_their_folder(tmp_path):
    from experiments.mlrc import READ_ONLY_FOLDER_AT, read_only_paths

    build_task(tmp_path, {"main.py": "", "methods/BaseMethod.py": "", "methods/Mine.py": ""})
    for i in range(READ_ONLY_FOLDER_AT + 1):
        (tmp_path / "data" / "images").mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / "images" / f"{i}.png").write_text("")
    (tmp_path / "data" / "dev.csv").write_text("")

    paths = read_only_paths(tmp_path, ["main.py", "methods/BaseMethod.py", "data/*"])

    # methods/Mine.py stays writable; data/ (66 read-only files) is one mount.
    assert paths == ["data", "main.py", "methods/BaseMethod.py"]


@pytest.mark.django_db
def test_the_analyses_show_the_configuration_cost_and_best_of_k(tiny, client):
    agent = AgentFactory(name="coi-agent")
    files = method_archive_files("double_max", DOUBLE_MAX, method_name="double_max")
    files["idea_source.txt"] = "CoI\n"
    dev = dev_run(tiny, files, agent=agent)
    dev.submission.llm_cost_usd, dev.submission.llm_unpriced_steps = Decimal("0.25"), 1
    dev.submission.save()
    experiment_execute(run_id=objective_test_queue(agent=agent, objective=tiny).pk)

    answer = client.get("/api/objective/analyses/", {"task": SLUG}).json()

    (row,) = answer["agents"]
    assert (row["agent"], row["idea_source"], row["trials"]) == ("coi-agent", "coi", 1)
    assert row["best_of_k"] == [{"k": 1, "n": 1, "share": 1.0, "why_empty": ""}]
    assert row["absolute_improvement"] == 96.0 - BASELINE
    # One step had no price: the cost is a lower bound.
    assert row["cost"]["n"] == 1 and row["cost"]["is_lower_bound"] is True
    assert row["cost"]["relative_improvement_per_usd"] == pytest.approx(improvement(96.0) / 0.25)
    filtered = client.get("/api/objective/analyses/", {"task": SLUG, "idea_source": "human"})
    assert filtered.json()["agents"] == []
    board = client.get("/api/leaderboard/", {"stage": "objective"}).json()
    assert board["rows"][0]["tasks"][0]["idea_source"] == "coi"
    assert client.get("/api/objective/analyses/", {"task": "kdd2023_none"}).status_code == 404


CLAUDE_TRACE = [
    {"role": "user", "content": "Improve the method."},
    {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "python x.py"}},
            {"type": "tool_use", "id": "b", "name": "Edit", "input": {"path": "m.py"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "Traceback", "is_error": True},
            {
                "type": "tool_result",
                "tool_use_id": "b",
                "content": "missing required parameter old_string",
                "is_error": True,
            },
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c", "name": "Bash", "input": {"command": "x"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "ok"}]},
]


@pytest.mark.django_db
def test_the_analyses_read_argument_errors_and_self_repairs_from_the_trace(tiny, client):
    agent = AgentFactory(name="traced-agent")
    files = method_archive_files("double_max", DOUBLE_MAX, method_name="double_max")
    files["claude_output.json"] = json.dumps(CLAUDE_TRACE)
    submission = submission_with_files(
        files,
        kinds={"claude_output.json": ArtifactKind.TRACE},
        agent=agent,
        task=tiny.task,
        stage=Stage.METHOD,
    )
    experiment_execute(run_id=experiment_queue(submission=submission, phase="dev").pk)
    experiment_execute(run_id=objective_test_queue(agent=agent, objective=tiny).pk)

    (row,) = client.get("/api/objective/analyses/", {"task": SLUG}).json()["agents"]

    assert row["trace"] == {
        "n_traced_trials": 1,
        "n_tool_calls": 3,
        "argument_error_share": 1 / 3,
        "n_execution_errors": 1,
        "repaired_share": 1.0,
        "why_empty": "",
    }
