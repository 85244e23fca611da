"""MLRC-Bench task folders in the layouts its published tasks use (issue 36),
each as a small folder built here: a task whose code reads `../scripts/` and
writes into a read-only folder at run time (as Causality_Discovery_Challenge
does), its test phase in a fresh copy of env/ or in the folder dev left, a
folder published with a README and env/ only, and conda environment files."""

import json
import shutil
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from experiments.environments import (
    _pip_failure,
    base_prefix,
    environment_file_read,
    interpreter_for,
)
from experiments.models import (
    EnvironmentStatus,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveTask,
    TaskEnvironment,
)
from experiments.queue import experiment_queue, objective_test_queue
from experiments.runner import experiment_execute
from submissions.models import Stage
from tests.benchmark.factories import AgentFactory
from tests.experiments.factories import submission_with_files

from .test_mlrc import BASE_METHOD, MAIN, build_task

SLUG = "neurips2025_scripts_reader"
CAUSALITY = Path("/work/shared/mlrc") / "causality-discovery"
# The task's code, in the shape of Causality_Discovery_Challenge's: the inputs
# and the labels are read from ../scripts/test_data/ in both phases, the dev
# phase trains and saves model_dir_NN/model.txt (a read-only path), and the
# test phase predicts with whatever model_dir_NN/model.txt holds.
EVALUATION = """\
import json
import os


def evaluate_model(method, phase):
    with open("../scripts/test_data/inputs.json") as handle:
        inputs = json.load(handle)
    train = None
    if phase == "dev":
        with open("data/train.json") as handle:
            train = json.load(handle)
    answer = method.run(phase, train, inputs, "model_dir_NN")
    os.makedirs("output", exist_ok=True)
    with open(f"output/{phase}_answer.json", "w") as handle:
        json.dump({"answer": answer}, handle)


def get_score(method, phase):
    with open("../scripts/test_data/target.json") as handle:
        target = json.load(handle)["target"]
    with open(f"output/{phase}_answer.json") as handle:
        answer = json.load(handle)["answer"]
    return 100.0 - abs(target - answer)
"""
MY_METHOD = """\
import os

from methods.BaseMethod import BaseMethod


class MyMethod(BaseMethod):
    def run(self, phase, train, inputs, model_dir):
        if phase == "dev":
            os.makedirs(model_dir, exist_ok=True)
            with open(os.path.join(model_dir, "model.txt"), "w") as handle:
                handle.write(str(sum(train)))
        with open(os.path.join(model_dir, "model.txt")) as handle:
            model = int(handle.read())
        return model + max(inputs)
"""
TASK_FILES = {
    "env/main.py": MAIN,
    "env/evaluation.py": EVALUATION,
    "env/constants.py": "",
    "env/methods/__init__.py": "from methods.MyMethod import MyMethod\n\n\n"
    'def all_method_handlers():\n    return {"my_method": MyMethod}\n',
    "env/methods/BaseMethod.py": BASE_METHOD,
    "env/methods/MyMethod.py": MY_METHOD,
    # Trained in dev: 3 + 4 = 7. The published model: 5.
    "env/data/train.json": "[3, 4]",
    "env/model_dir_NN/model.txt": "5",
    "scripts/research_problem.txt": "# Scripts reader\n\nPredict the target.\n",
    "scripts/read_only_files.txt": "main.py\nevaluation.py\nconstants.py\nmodel_dir_NN/*\n"
    "data/*\nmethods/BaseMethod.py\nmethods/MyMethod.py\n",
    "scripts/test_data/inputs.json": "[1, 2]",
    "scripts/test_data/target.json": '{"target": 10}',
}
# 100 - |10 - (model + 2)|: the trained model (7) scores 99, the published one (5) 97.
TRAINED, PUBLISHED_MODEL = 99.0, 97.0
LABELS = "--labels=../scripts/test_data/target.json"


def import_task(folder: Path, *extra: str, slug: str = SLUG) -> str:
    out = StringIO()
    call_command(
        "objective_task",
        "import-mlrc",
        str(folder),
        f"--slug={slug}",
        "--metric=closeness",
        "--higher-is-better",
        "--baseline=97",
        "--human=100",
        LABELS,
        *extra,
        stdout=out,
    )
    return out.getvalue()


def dev_then_test(objective: ObjectiveTask, files: dict[str, str]):
    agent = AgentFactory()
    submission = submission_with_files(files, agent=agent, task=objective.task, stage=Stage.METHOD)
    dev = experiment_execute(run_id=experiment_queue(submission=submission, phase="dev").pk)
    assert dev is not None and dev.status == ExperimentStatus.SUCCEEDED, dev and dev.reason
    test = experiment_execute(run_id=objective_test_queue(agent=agent, objective=objective).pk)
    assert test is not None
    return dev, test


BASELINE_ARCHIVE = {"method_name.txt": "my_method\n", "methods/README.md": "the baseline"}


@pytest.fixture
def scripts_task(experiment_settings, experiment_root) -> Path:
    return build_task(experiment_root / "scripts-reader", TASK_FILES)


@pytest.mark.django_db
def test_a_task_reading_scripts_runs_and_writes_its_read_only_model_folder(scripts_task):
    out = import_task(scripts_task)
    assert "test phase: in a fresh copy of env/" in out and "--test-folder dev-left" in out
    assert "dev phase: ../scripts/test_data/ beside env/ in dev too, less its labels" in out
    assert "(env/evaluation.py reads it;" in out
    objective = ObjectiveTask.objects.get(task__slug=SLUG)

    dev, test = dev_then_test(objective, BASELINE_ARCHIVE)

    # ../scripts/test_data/inputs.json resolved, and the baseline saved
    # model_dir_NN/model.txt although read_only_files.txt lists it.
    assert dev.score == TRAINED
    assert "model_dir_NN/model.txt" in {output["path"] for output in dev.outputs}
    # A fresh copy of env/: the published model.
    assert (test.status, test.score) == (ExperimentStatus.SUCCEEDED, PUBLISHED_MODEL), test.reason


@pytest.mark.django_db
def test_a_test_phase_in_the_folder_dev_left_uses_what_dev_trained(scripts_task, client):
    out = import_task(scripts_task, "--test-folder=dev-left")
    assert "test phase: in the folder the method's dev phase left" in out
    objective = ObjectiveTask.objects.get(task__slug=SLUG)

    _, test = dev_then_test(objective, BASELINE_ARCHIVE)

    assert (test.status, test.score) == (ExperimentStatus.SUCCEEDED, TRAINED), test.reason
    log = test.log.read().decode()
    assert "-p dev" in log and "-p test" in log and "dev first" in log
    page = client.get(f"/tasks/{SLUG}/").content.decode()
    assert "The folder the dev phase left" in page


@pytest.mark.django_db
def test_the_labels_beside_env_are_the_scoring_steps_only(scripts_task):
    import_task(scripts_task)
    objective = ObjectiveTask.objects.get(task__slug=SLUG)
    peek = (
        "import json, os\n"
        "from methods.MyMethod import MyMethod\n\n\n"
        "class Peek(MyMethod):\n"
        "    def run(self, phase, train, inputs, model_dir):\n"
        "        if os.path.exists('../scripts/test_data/target.json'):\n"
        "            return json.load(open('../scripts/test_data/target.json'))['target']\n"
        "        return super().run(phase, train, inputs, model_dir)\n"
    )
    files = {
        "method_name.txt": "peek\n",
        "methods/Peek.py": peek,
        "methods/__init__.py": "from methods.MyMethod import MyMethod\n"
        "from methods.Peek import Peek\n\n\ndef all_method_handlers():\n"
        '    return {"my_method": MyMethod, "peek": Peek}\n',
    }

    dev, test = dev_then_test(objective, files)

    assert (dev.score, test.score) == (TRAINED, PUBLISHED_MODEL)  # never the label's 100


# --- a folder published with a README and env/ only ----------------------------

README = "# Scripts reader, README only\n\nPredict the target from the inputs.\n"


@pytest.fixture
def readme_task(experiment_settings, experiment_root) -> Path:
    files = {
        path: text
        for path, text in TASK_FILES.items()
        if not path.startswith("scripts/") or path.startswith("scripts/test_data/")
    }
    files["README.md"] = README
    return build_task(experiment_root / "readme-only", files)


@pytest.mark.django_db
def test_a_folder_without_scripts_text_files_names_what_it_lacks(readme_task):
    (readme_task / "README.md").unlink()
    with pytest.raises(CommandError) as error:
        import_task(readme_task)
    message = str(error.value)
    assert (
        "no scripts/read_only_files.txt file: give the files methods may not change with "
        "--read-only GLOB" in message
    )
    assert (
        "no scripts/research_problem.txt file and no README: give the statement with "
        "--research-problem FILE" in message
    )
    assert not ObjectiveTask.objects.exists()


@pytest.mark.django_db
def test_a_folder_without_scripts_text_files_imports_with_the_organisers_parts(
    readme_task, tmp_path, client
):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# the host's Python is enough\n")
    out = import_task(
        readme_task,
        "--read-only",
        "main.py",
        "evaluation.py",
        "model_dir_NN/*",
        f"--requirements={requirements}",
    )

    assert "research problem: README.md" in out
    assert "read-only files: --read-only" in out
    assert f"environment: {requirements}" in out
    objective = ObjectiveTask.objects.select_related("task").get(task__slug=SLUG)
    assert objective.task.description == README
    assert objective.read_only_files == ["main.py", "evaluation.py", "model_dir_NN/*"]
    dev, test = dev_then_test(objective, BASELINE_ARCHIVE)
    assert (dev.score, test.score) == (TRAINED, PUBLISHED_MODEL)

    # The organiser's statement wins over the README; a changed part is a new version.
    statement = tmp_path / "problem.md"
    statement.write_text("# Another statement\n")
    out = import_task(readme_task, "--read-only", "main.py", f"--research-problem={statement}")
    assert "new version (version 2)" in out and f"research problem: {statement}" in out
    objective.refresh_from_db()
    objective.task.refresh_from_db()
    assert objective.task.description == "# Another statement\n"


@pytest.mark.django_db
def test_a_task_missing_from_mlrc_benchs_constants_table_runs(scripts_task):
    # MLAgentBench.constants has no entry for this task's TASK_NAME ("tiny", in
    # main.py): the site fills the table from the task it imported.
    import_task(scripts_task)
    objective = ObjectiveTask.objects.get(task__slug=SLUG)
    dev, _ = dev_then_test(objective, BASELINE_ARCHIVE)
    assert dev.score == TRAINED
    # MLRC-Bench's improvement_perc, against the baseline the import was given.
    assert dev.metrics["improvement_perc"] == pytest.approx(100 * (TRAINED - 97) / 97)


# --- environments from MLRC-Bench's conda files ---------------------------------


def test_conda_names_become_pypi_names_and_python_is_read():
    text = (CAUSALITY / "scripts" / "environment.yml").read_text()
    found = environment_file_read("scripts/environment.yml", text)

    assert "torch" in found.requirements and "pytorch" not in found.requirements
    assert {"pytorch-lightning", "scikit-learn", "networkx"} <= set(found.requirements)
    assert not {"python", "pip"} & set(found.requirements)
    assert found.renamed == [("pytorch", "torch")]
    assert found.python == "3.10"
    opencv = environment_file_read(
        "environment.yml", "dependencies:\n  - py-opencv=4.8\n  - pytorch-cuda=12.1\n"
    )
    assert (opencv.requirements, opencv.renamed) == (
        ["opencv-python==4.8.*"],
        [("py-opencv", "opencv-python")],
    )


def test_the_python_asked_for_is_used_where_the_host_has_it(settings):
    settings.TASK_ENV_PYTHON = sys.executable
    own = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert interpreter_for(own).note == ""
    absent = interpreter_for("3.1")
    assert absent.path == sys.executable
    assert absent.note.startswith("python 3.1 asked for; this host has no python3.1: built with ")


def test_a_pip_failure_names_the_one_requirement_it_cannot_install():
    output = "".join(
        f"Collecting {name}\n  Using cached {name}-1.0.whl\n"
        for name in ("numpy", "pandas", "networkx", "scikit-learn", "scipy", "tqdm")
    ) + (
        "ERROR: Could not find a version that satisfies the requirement pytorch "
        "(from versions: none)\nERROR: No matching distribution found for pytorch\n"
    )
    requirements = ["networkx", "numpy", "pandas", "pytorch", "scikit-learn", "scipy", "tqdm"]
    message = _pip_failure(output, requirements)
    assert message.startswith("pip cannot install pytorch:\n")
    assert "numpy" not in message.splitlines()[0]


@pytest.mark.django_db
def test_an_asked_python_the_host_lacks_is_said_at_import_and_on_the_page(scripts_task, client):
    (scripts_task / "scripts" / "environment.yml").write_text("dependencies:\n  - python=3.1\n")
    out = import_task(scripts_task)
    assert "environment: python 3.1 asked for; this host has no python3.1: built with" in out
    page = client.get(f"/tasks/{SLUG}/").content.decode()
    assert "3.1 asked for" in page and "this host has no python3.1" in page
    answer = client.get(f"/api/objective/tasks/{SLUG}/").json()["environment"]
    assert answer["python_requested"] == "3.1" and "no python3.1" in answer["python_note"]


@pytest.mark.django_db
def test_an_environment_that_cannot_be_built_imports_nothing_and_leaves_nothing(
    scripts_task, settings, experiment_root
):
    settings.TASK_ENV_ROOT = experiment_root / "envs"
    (scripts_task / "scripts" / "requirements.txt").write_text(
        "tqdm\nmlrbench-no-such-package-xyz==0.0.1\n"
    )
    out = StringIO()
    with pytest.raises(CommandError) as error:
        call_command(
            "objective_task",
            "import-mlrc",
            str(scripts_task),
            f"--slug={SLUG}",
            "--metric=closeness",
            "--higher-is-better",
            "--baseline=97",
            "--human=100",
            "--build-env",
            stdout=out,
        )

    first = str(error.value).splitlines()[1]
    assert "pip cannot install mlrbench-no-such-package-xyz==0.0.1" in first
    assert "tqdm" not in first
    assert "  | " in out.getvalue()  # pip's progress, as it came
    assert not ObjectiveTask.objects.exists()
    assert not TaskEnvironment.objects.filter(status=EnvironmentStatus.READY).exists()
    assert not any((experiment_root / "envs").glob("*/bin"))
    assert not (Path(settings.EXPERIMENT_DATA_ROOT) / SLUG).exists()


@pytest.mark.django_db
def test_a_run_of_a_task_without_its_environment_says_the_command_or_builds_it(
    scripts_task, settings, experiment_root
):
    settings.TASK_ENV_ROOT = experiment_root / "envs"
    (scripts_task / "scripts" / "requirements.txt").write_text("tqdm\n")
    import_task(scripts_task)
    objective = ObjectiveTask.objects.select_related("task").get(task__slug=SLUG)
    submission = submission_with_files(
        BASELINE_ARCHIVE, agent=AgentFactory(), task=objective.task, stage=Stage.METHOD
    )
    queue = ("run_experiment", f"--submission={submission.pk}", "--phase=dev")
    with pytest.raises(CommandError, match=f"`objective_task env-build {SLUG}`"):
        call_command(*queue, stdout=StringIO())

    out = StringIO()
    call_command(*queue, "--build-env", stdout=out)

    assert "  | " in out.getvalue() and "queued" in out.getvalue()
    environment = TaskEnvironment.objects.get()
    assert environment.status == EnvironmentStatus.READY
    assert any(line.lower().startswith("tqdm==") for line in environment.packages)
    assert ExperimentRun.objects.filter(submission=submission, phase="dev").exists()
    shutil.rmtree(environment.path, ignore_errors=True)
    assert json.loads(json.dumps(environment.packages))  # stored as JSON


def test_an_environment_from_an_interpreter_outside_usr_mounts_that_interpreter(tmp_path):
    # A python3.10 found on the PATH (pyenv's, say) lives outside /usr: the
    # venv's `python` links there, so a run mounts that installation too.
    home = tmp_path / "pyenv" / "versions" / "3.10.13" / "bin"
    home.mkdir(parents=True)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = false\n")
    assert base_prefix(TaskEnvironment(path=str(venv))) == home.parent
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert base_prefix(TaskEnvironment(path=str(venv))) is None


@pytest.mark.django_db
def test_a_dev_phase_without_the_test_data_beside_it_says_what_it_missed(scripts_task):
    out = import_task(scripts_task, "--dev-test-data=hidden")
    assert "dev phase: ../scripts/ beside env/ without test_data/ in dev" in out
    objective = ObjectiveTask.objects.select_related("task").get(task__slug=SLUG)
    submission = submission_with_files(
        BASELINE_ARCHIVE, agent=AgentFactory(), task=objective.task, stage=Stage.METHOD
    )
    dev = experiment_execute(run_id=experiment_queue(submission=submission, phase="dev").pk)
    assert dev.status == ExperimentStatus.FAILED and dev.score is None
    assert "../scripts/test_data/inputs.json" in dev.reason
