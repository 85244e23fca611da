"""MLRC-Bench's Causality_Discovery_Challenge as published, run by the site and
by MLRC-Bench's own procedure side by side (issue 36, item 5).

The folder (../shared/mlrc/causality-discovery) is imported as it is with
`objective_task import-mlrc --build-env` (its conda file: `pytorch` -> `torch`,
`python=3.10` honoured where the host has it, else said). Each method then
runs on dev and on test twice:

- by the site: the runner's two sandboxed steps (the method in env/ with the
  task's scripts/ beside it, then the task's get_score on a pristine copy);
- by MLRC-Bench's procedure (its launch script's layout): a fresh copy of env/
  with scripts/ linked beside it; for test, `cp -r ../scripts/test_data/*
  data/`; then `python main.py -m METHOD -p PHASE` with the same environment.

It prints each score both ways (they must be equal) and the ratio of the
site's wall time to the procedure's.

    DEBUG=1 .venv/bin/python perf/mlrc_causality.py [--test-folder fresh|dev-left] [--smoke]

Full: the task's own environment (torch and pytorch-lightning: minutes to
build, minutes per baseline run on a CPU; torch is pinned to the host's CPU
wheel with PIP_CONSTRAINT when --torch is given) and three methods: the
baseline `my_method` (its dev phase trains without a seed: its two dev
scores differ by chance), `seeded_nn` (the baseline seeded, 3 epochs) and
`x_to_y_only` (no torch: the one mandatory edge).
`--smoke`: the environment evaluation.py needs (pandas, scikit-learn, through
`--requirements`) and `x_to_y_only` alone, dev and test: seconds once the
packages are cached, and every check the full run makes. The procedure's side
then calls evaluate_model and get_score as main.py does (main.py itself
imports the torch baseline).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from io import StringIO
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
os.environ.setdefault("DEBUG", "1")

TASK = Path(os.environ.get("MLRC_DATA", "/work/shared/mlrc")) / "causality-discovery"
SLUG = "adia2024_causality_discovery"
# Balanced accuracy: the baseline's test score on this synthetic data (the
# folder's README); no top human is published, so any better score stands in.
BASELINE, HUMAN = 0.70202, 1.0
X_TO_Y_ONLY = """\
import pandas as pd

from methods.BaseMethod import BaseMethod


class XToYOnly(BaseMethod):
    \"\"\"No learning: every graph gets only the edge X -> Y the task requires.\"\"\"

    def run(self, phase, X_train=None, y_train=None, X_test=None,
            model_directory_path="model_dir_NN", id_column_name="id",
            prediction_column_name="pred"):
        rows = []
        for name, frame in X_test.items():
            for parent in frame.columns:
                for child in frame.columns:
                    edge = int(parent == "X" and child == "Y")
                    rows.append({id_column_name: f"{name}_{parent}_{child}",
                                 prediction_column_name: edge})
        return pd.DataFrame(rows)
"""
SEEDED_NN = """\
import torch

from methods.MyMethod import MyMethod


class SeededNN(MyMethod):
    \"\"\"The baseline with a fixed seed and 3 epochs: the same model every run.\"\"\"

    def __init__(self, name):
        super().__init__(name, max_epochs=3)

    def run(self, *args, **kwargs):
        torch.manual_seed(0)
        return super().run(*args, **kwargs)
"""
INIT_SMOKE = """\
from methods.XToYOnly import XToYOnly


def all_method_handlers():
    return {"x_to_y_only": XToYOnly}
"""
INIT_FULL = """\
from methods.MyMethod import MyMethod
from methods.SeededNN import SeededNN
from methods.XToYOnly import XToYOnly


def all_method_handlers():
    return {"my_method": MyMethod, "seeded_nn": SeededNN, "x_to_y_only": XToYOnly}
"""
REFERENCE_SMOKE = (
    "import sys\n"
    "from evaluation import evaluate_model, get_score\n"
    "from methods import all_method_handlers\n"
    "method = all_method_handlers()[sys.argv[1]](sys.argv[1])\n"
    "evaluate_model(method, sys.argv[2])\n"
    "print('SCORE', repr(float(get_score(method, sys.argv[2]))))\n"
)


def _methods_folder(root: Path, smoke: bool) -> Path:
    folder = root / "method"
    (folder / "methods").mkdir(parents=True)
    (folder / "methods" / "XToYOnly.py").write_text(X_TO_Y_ONLY)
    if not smoke:
        (folder / "methods" / "SeededNN.py").write_text(SEEDED_NN)
    (folder / "methods" / "__init__.py").write_text(INIT_SMOKE if smoke else INIT_FULL)
    return folder


def _import(root: Path, smoke: bool, test_folder: str) -> str:
    from django.core.management import call_command

    extra = [f"--test-folder={test_folder}", "--build-env"]
    if smoke:
        requirements = root / "requirements.txt"
        requirements.write_text("pandas\nscikit-learn\n")
        extra.append(f"--requirements={requirements}")
    out = StringIO()
    call_command(
        "objective_task",
        "import-mlrc",
        str(TASK),
        f"--slug={SLUG}",
        "--metric=balanced_accuracy",
        "--higher-is-better",
        f"--baseline={BASELINE}",
        f"--human={HUMAN}",
        "--metric-min=0",
        "--metric-max=1",
        "--time-limit=3000",
        # y_test_reduced: the test labels, the scoring step's only.
        "--labels=../scripts/test_data/y_*",
        *extra,
        stdout=out,
    )
    return out.getvalue()


def _site_run(objective, method_folder: Path, method: str, phase: str) -> tuple[float, float]:
    from experiments.queue import experiment_queue, objective_test_queue
    from experiments.runner import experiment_execute
    from experiments.shipped import example_submission

    (method_folder / "method_name.txt").write_text(method + "\n")
    submission, _ = example_submission(
        objective=objective, agent_name=f"perf-{method.replace('_', '-')}", method=method_folder
    )
    started = time.perf_counter()
    queued = (
        experiment_queue(submission=submission, phase="dev")
        if phase == "dev"
        else objective_test_queue(agent=submission.agent, objective=objective)
    )
    run = experiment_execute(run_id=queued.pk)
    elapsed = time.perf_counter() - started
    if run is None or run.score is None:
        log = run.log.read().decode()[-3000:] if run is not None and run.log else ""
        raise SystemExit(
            f"the site's {phase} run of {method} gave no score: {run and run.reason}\n{log}"
        )
    return run.score, elapsed


def _reference(
    root: Path,
    method_folder: Path,
    method: str,
    phase: str,
    test_folder: str,
    python: str,
    smoke: bool,
) -> tuple[float, float]:
    """MLRC-Bench's procedure: scripts/ linked beside a fresh copy of env/."""
    from experiments import mlrc

    work = root / f"reference-{method}-{phase}"
    work.mkdir()
    (work / "scripts").symlink_to(TASK / "scripts")
    env = work / "env"
    shutil.copytree(TASK / "env", env)
    shutil.copytree(method_folder / "methods", env / "methods", dirs_exist_ok=True)
    environ = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "PYTHONPATH": str(mlrc.SHIM_ROOT)}
    command = [python, "main.py", "-m", method, "-p", phase]
    if smoke:
        command = [python, "-c", REFERENCE_SMOKE, method, phase]
    started = time.perf_counter()
    if phase == "test":
        if test_folder == "dev-left":
            _run([*command[:-1], "dev"], env, environ)
        # `cp -r ../scripts/test_data/* data/`
        shutil.copytree(TASK / "scripts" / "test_data", env / "data", dirs_exist_ok=True)
    output = _run(command, env, environ)
    elapsed = time.perf_counter() - started
    if smoke:
        score = float(output.split("SCORE", 1)[1].strip())
    else:
        import json

        evals = json.loads((env / "output" / "idea_evals.json").read_text())
        score = [e for e in evals["implementations"] if e["phase"] == phase][-1]["performance"]
    return score, elapsed


def _run(command: list[str], cwd: Path, environ: dict[str, str]) -> str:
    done = subprocess.run(  # noqa: S603 - the script's own command
        command, cwd=cwd, env=environ, capture_output=True, text=True, timeout=3000, check=False
    )
    if done.returncode != 0:
        raise SystemExit(
            f"MLRC-Bench's procedure failed: {' '.join(command)}\n{done.stderr[-3000:]}"
        )
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test-folder", choices=["fresh", "dev-left"], default="fresh")
    parser.add_argument("--smoke", action="store_true", help="torch-free: does the script run?")
    parser.add_argument(
        "--torch", metavar="REQUIREMENT", help="pin torch for the build, e.g. torch==2.13.0"
    )
    args = parser.parse_args()
    if not (TASK / "env" / "main.py").is_file():
        print(f"{TASK} is not here (see shared/mlrc/README.md): nothing to measure")
        return
    root = Path(tempfile.mkdtemp(prefix="mlrbench-perf-causality-", dir="/tmp"))
    os.chmod(root, 0o755)  # noqa: S103 - the sandbox user enters it
    for name, folder in (
        ("TASK_ENV_ROOT", "envs"),
        ("EXPERIMENT_WORK_ROOT", "exp"),
        ("EXPERIMENT_DATA_ROOT", "objective"),
        ("MEDIA_ROOT", "media"),
    ):
        os.environ[name] = str(root / folder)
    if args.torch:
        constraints = root / "constraints.txt"
        constraints.write_text(args.torch + "\n")
        os.environ["PIP_CONSTRAINT"] = str(constraints)
    import django

    django.setup()
    from django.test.utils import setup_databases, teardown_databases

    from experiments.models import ObjectiveTask, TaskEnvironment
    from sandbox import sandbox_problem

    problem = sandbox_problem()
    if problem:
        raise SystemExit(f"the sandbox cannot run here: {problem}")
    old_config = setup_databases(verbosity=0, interactive=False)
    try:
        started = time.perf_counter()
        said = _import(root, args.smoke, args.test_folder)
        build = time.perf_counter() - started
        for line in said.splitlines():
            if not line.startswith("  | "):
                print(f"  {line}")
        environment = TaskEnvironment.objects.get()
        print(
            f"import with --build-env: {build:.1f} s (Python {environment.python_version}, "
            f"{len(environment.packages)} packages)"
        )
        objective = ObjectiveTask.objects.select_related("task").get(task__slug=SLUG)
        method_folder = _methods_folder(root, args.smoke)
        methods = ["x_to_y_only"] if args.smoke else ["my_method", "seeded_nn", "x_to_y_only"]
        unequal = []
        for method in methods:
            for phase in ("dev", "test"):
                site, site_seconds = _site_run(objective, method_folder, method, phase)
                ours, ref_seconds = _reference(
                    root,
                    method_folder,
                    method,
                    phase,
                    args.test_folder,
                    environment.python,
                    args.smoke,
                )
                same = site == ours
                if not same and not (method == "my_method" and phase == "dev"):
                    unequal.append(f"{method} {phase}")
                print(
                    f"{method:12s} {phase:4s}: site {site:.6f}, MLRC-Bench's procedure "
                    f"{ours:.6f} ({'equal' if same else 'DIFFERENT'}); wall time site / "
                    f"procedure {site_seconds:.1f} s / {ref_seconds:.1f} s = "
                    f"{site_seconds / ref_seconds:.2f}"
                )
        if unequal:
            raise SystemExit(f"scores differ from MLRC-Bench's procedure: {', '.join(unequal)}")
    finally:
        teardown_databases(old_config, verbosity=0)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
