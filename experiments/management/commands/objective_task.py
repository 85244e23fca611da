from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from benchmark.models import Agent
from experiments.environments import environment_state, objective_environment_build
from experiments.errors import EnvironmentInvalid, ExperimentRefused, ObjectiveTaskInvalid
from experiments.forgery import objective_scoring_check
from experiments.models import ObjectiveResult, ObjectiveTask, TestFolder, TestPhase
from experiments.objective_tasks import objective_task_define, objective_task_import_mlrc
from experiments.queue import objective_test_queue
from experiments.results import objective_test_score_record
from experiments.selectors import objective_trials_to_test
from experiments.shipped import objective_tasks_install
from submissions.models import Submission

TEST_FOLDER_SAYS: dict[str, str] = {
    TestFolder.FRESH: "in a fresh copy of env/ (MLRC-Bench's README runs it in the folder "
    "the dev phase left: --test-folder dev-left)",
    TestFolder.DEV_LEFT: "in the folder the method's dev phase left, as MLRC-Bench's README "
    "runs it (the site's default, a fresh copy of env/: --test-folder fresh)",
}
SLUG_HELP = "<venue><year>_<name>, e.g. kdd2023_product_recommendation"


def _range_arguments(parser) -> None:
    parser.add_argument(
        "--metric-min", type=float, help="the lowest possible score (default: by metric name)"
    )
    parser.add_argument(
        "--metric-max", type=float, help="the highest possible score (default: by metric name)"
    )


class Command(BaseCommand):
    help = (
        "Objective tasks (MLRC-Bench style): `add` defines one, `import-mlrc` imports an "
        "MLRC-Bench task folder as it is published, `list` shows them, `evaluate` runs "
        "the best dev run of each agent's trial once on the test data, `install` "
        "installs the tasks shipped with the site (and with --examples runs their "
        "example methods), `env-build` builds a task version's Python environment, "
        "`test-score` records a test score obtained elsewhere."
    )

    def add_arguments(self, parser):
        """Long because it declares each of the command's flags."""
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="define or update an objective task")
        add.add_argument("--slug", required=True, help=SLUG_HELP)
        add.add_argument("--title")
        add.add_argument("--description-file", type=Path, help="the task as markdown")
        add.add_argument("--metric", required=True, help="key of metrics.json")
        direction = add.add_mutually_exclusive_group(required=True)
        direction.add_argument("--higher-is-better", action="store_true")
        direction.add_argument("--lower-is-better", action="store_true")
        add.add_argument("--baseline", type=float, required=True, help="the baseline's score")
        add.add_argument("--human", type=float, required=True, help="the top human's score")
        add.add_argument(
            "--eval-command", required=True, help="writes metrics.json in its working folder"
        )
        add.add_argument("--eval-dir", type=Path, help="the evaluation program, seen at /task")
        add.add_argument("--dev-data", type=Path, required=True, help="with public/ and private/")
        add.add_argument("--test-data", type=Path, required=True, help="with public/ and private/")
        add.add_argument("--method-command", default="sh run.sh")
        add.add_argument("--time-limit", type=int, default=600, metavar="SECONDS")
        add.add_argument("--gpus", type=int, default=0)
        _range_arguments(add)
        mlrc = sub.add_parser(
            "import-mlrc", help="import an MLRC-Bench task folder (env/ and scripts/)"
        )
        mlrc.add_argument("path", type=Path, help="the task folder, holding env/ and scripts/")
        mlrc.add_argument("--slug", required=True, help=SLUG_HELP)
        mlrc.add_argument("--title")
        mlrc.add_argument("--metric", required=True, help="the name of the score main.py saves")
        direction = mlrc.add_mutually_exclusive_group(required=True)
        direction.add_argument("--higher-is-better", action="store_true")
        direction.add_argument("--lower-is-better", action="store_true")
        mlrc.add_argument("--baseline", type=float, required=True, help="the baseline's score")
        mlrc.add_argument("--human", type=float, required=True, help="the top human's score")
        mlrc.add_argument(
            "--baseline-runtime", type=float, metavar="SECONDS", help="the baseline's runtime"
        )
        mlrc.add_argument("--time-limit", type=int, default=600, metavar="SECONDS")
        mlrc.add_argument("--gpus", type=int, default=0)
        _range_arguments(mlrc)
        mlrc.add_argument(
            "--labels",
            action="append",
            metavar="GLOB",
            help="label files under env/ (the test data once in data/) that only the scoring "
            "step sees; repeatable (default: data/*label*)",
        )
        mlrc.add_argument(
            "--test-phase",
            choices=TestPhase.values,
            default=TestPhase.LOCAL,
            help="external: the test set is scored elsewhere (no scripts/test_data needed)",
        )
        mlrc.add_argument(
            "--dev-baseline-score",
            type=float,
            help="the baseline's dev score (MLRC-Bench's improvement_perc on dev divides by it; "
            "default: the forged-label check's run of the baseline)",
        )
        mlrc.add_argument(
            "--skip-scoring-check",
            action="store_true",
            help="do not run the forged-label check now (`check-scoring SLUG` runs it later)",
        )
        mlrc.add_argument(
            "--test-folder",
            choices=TestFolder.values,
            default=TestFolder.FRESH,
            help="where the test phase runs: a fresh copy of env/ (the site's default) or "
            "dev-left, the folder the method's dev phase left (MLRC-Bench's README)",
        )
        mlrc.add_argument(
            "--research-problem",
            type=Path,
            metavar="FILE",
            help="the task statement, for a folder without scripts/research_problem.txt "
            "(default: the folder's README)",
        )
        mlrc.add_argument(
            "--read-only",
            nargs="+",
            metavar="GLOB",
            help="the files under env/ methods may not change, for a folder without "
            "scripts/read_only_files.txt",
        )
        mlrc.add_argument(
            "--requirements",
            type=Path,
            metavar="FILE",
            help="the task's environment (requirements.txt or a conda environment.yml), "
            "for a folder without one in scripts/",
        )
        mlrc.add_argument(
            "--dev-test-data",
            choices=["auto", "beside", "hidden"],
            default="auto",
            help="whether the dev phase has ../scripts/test_data/ (less its labels) beside "
            "env/, as MLRC-Bench's launch does (auto: where the task's code reads it)",
        )
        mlrc.add_argument(
            "--build-env", action="store_true", help="build the task's environment right away"
        )
        check = sub.add_parser(
            "check-scoring",
            help="the forged-label check: does get_score read labels the method writes?",
        )
        check.add_argument("slug")
        build = sub.add_parser("env-build", help="build a task version's Python environment")
        build.add_argument("slug")
        build.add_argument("--version", type=int, help="the task version (default: the current)")
        score = sub.add_parser("test-score", help="record a test score obtained elsewhere")
        score.add_argument("--submission", type=int, required=True, help="the method submission")
        score.add_argument("--score", type=float, required=True)
        score.add_argument("--source", required=True, help="where the score comes from")
        sub.add_parser("list", help="list the objective tasks")
        evaluate = sub.add_parser("evaluate", help="evaluate best dev runs on the test data")
        evaluate.add_argument("--slug", required=True)
        evaluate.add_argument("--agent", help="only this agent (its name)")
        install = sub.add_parser("install", help="install the objective tasks shipped here")
        install.add_argument(
            "--examples",
            action="store_true",
            help="submit the example methods and run them (in-process without a broker)",
        )

    def handle(self, *args, action: str, **options):
        getattr(self, f"_{action.replace('-', '_')}")(**options)

    def _add(self, **o):
        description = None
        if o["description_file"]:
            try:
                description = o["description_file"].read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"cannot read {o['description_file']}: {exc}") from exc
        try:
            objective, created = objective_task_define(
                slug=o["slug"],
                title=o["title"],
                description=description,
                metric=o["metric"],
                higher_is_better=o["higher_is_better"],
                baseline_score=o["baseline"],
                human_score=o["human"],
                eval_command=o["eval_command"],
                eval_dir=o["eval_dir"],
                dev_data_dir=o["dev_data"],
                test_data_dir=o["test_data"],
                method_command=o["method_command"],
                time_limit_seconds=o["time_limit"],
                gpu_count=o["gpus"],
                metric_min=o["metric_min"],
                metric_max=o["metric_max"],
            )
        except ObjectiveTaskInvalid as exc:
            lines = "\n".join(f"  - {problem}" for problem in exc.problems)
            raise CommandError(f"the objective task was not saved:\n{lines}") from exc
        verb = "created" if created else "updated"
        self.stdout.write(self.style.SUCCESS(f"objective task {objective.task.slug} {verb}"))

    def _import_mlrc(self, **o):
        try:
            objective, outcome, notes = objective_task_import_mlrc(
                path=o["path"],
                slug=o["slug"],
                title=o["title"],
                metric=o["metric"],
                higher_is_better=o["higher_is_better"],
                baseline_score=o["baseline"],
                human_score=o["human"],
                baseline_runtime_seconds=o["baseline_runtime"],
                time_limit_seconds=o["time_limit"],
                gpu_count=o["gpus"],
                metric_min=o["metric_min"],
                metric_max=o["metric_max"],
                labels=o["labels"],
                test_phase=o["test_phase"],
                dev_baseline_score=o["dev_baseline_score"],
                test_folder=o["test_folder"],
                research_problem=o["research_problem"],
                read_only=o["read_only"],
                requirements=o["requirements"],
                dev_test_data=o["dev_test_data"],
                build_env=o["build_env"],
                progress=self._progress,
            )
        except ObjectiveTaskInvalid as exc:
            lines = "\n".join(f"  - {problem}" for problem in exc.problems)
            raise CommandError(f"the task folder was not imported:\n{lines}") from exc
        for part, source in notes.sources.items():
            self.stdout.write(f"{part}: {source}")
        for conda, pypi in notes.renamed:
            self.stdout.write(f"environment: conda's {conda} is {pypi} on PyPI")
        if notes.python_note:
            self.stdout.write(self.style.WARNING(f"environment: {notes.python_note}"))
        self.stdout.write(f"test phase: {TEST_FOLDER_SAYS[notes.test_folder]}")
        self.stdout.write(f"dev phase: {notes.dev_test_data}")
        self.stdout.write(
            self.style.SUCCESS(
                f"objective task {objective.task.slug} {outcome} (version {objective.version})"
            )
        )
        state = environment_state(
            list(objective.environment_requirements or []), objective.environment_python
        )
        if state["status"] != "ready":
            self.stdout.write(
                f"its environment is {state['status']}: build it with "
                f"`objective_task env-build {objective.task.slug}` (or import with --build-env)"
            )

        if objective.scoring_forgeable is not None:
            self.stdout.write(f"scoring check: {objective.scoring_check}")
        elif o["skip_scoring_check"]:
            self.stdout.write(
                f"scoring check skipped: run `objective_task check-scoring {objective.task.slug}`"
            )
        else:
            self._scoring_check(objective)

    def _check_scoring(self, **o):
        objective = (
            ObjectiveTask.objects.select_related("task").filter(task__slug=o["slug"]).first()
        )
        if objective is None:
            raise CommandError(f"there is no objective task {o['slug']}")
        if not objective.is_mlrc:
            raise CommandError(f"{o['slug']} is not an MLRC-Bench task folder: nothing to check")
        self._scoring_check(objective)

    def _scoring_check(self, objective: ObjectiveTask) -> None:
        self.stdout.write(
            f"scoring check: running the baseline ({objective.baseline_method}) on dev, "
            "then get_score on its output as written and with its label-like columns altered"
        )
        check = objective_scoring_check(objective=objective)
        if check.forgeable:
            self.stdout.write(self.style.WARNING(f"scoring check: {check.summary}"))
        elif check.forgeable is None:
            self.stderr.write(
                self.style.WARNING(
                    f"scoring check: {check.summary}\nrun it again with "
                    f"`objective_task check-scoring {objective.task.slug}`"
                )
            )
        else:
            self.stdout.write(self.style.SUCCESS(f"scoring check: {check.summary}"))

    def _progress(self, line: str) -> None:
        self.stdout.write(f"  | {line}")
        self.stdout.flush()

    def _env_build(self, **o):
        objective = (
            ObjectiveTask.objects.select_related("task").filter(task__slug=o["slug"]).first()
        )
        if objective is None:
            raise CommandError(f"there is no objective task {o['slug']}")
        version = o["version"] or objective.version
        try:
            environment = objective_environment_build(
                objective=objective, version=version, progress=self._progress
            )
        except (EnvironmentInvalid, ExperimentRefused) as exc:
            problems = getattr(exc, "problems", None) or [str(exc)]
            lines = "\n".join(f"  - {problem}" for problem in problems)
            raise CommandError(f"the environment was not built:\n{lines}") from exc
        label = f"{objective.task.slug} version {version}"
        if environment is None:
            self.stdout.write(f"{label} asks for no packages: runs use the host's Python")
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"{label}: environment {environment.spec_sha256[:12]} ready at "
                f"{environment.path} (Python {environment.python_version or '?'}, "
                f"{len(environment.packages)} packages, built in "
                f"{environment.build_seconds or 0:.1f} s)"
            )
        )
        if version == objective.version and objective.scoring_forgeable is None:
            # The forged-label check waited for this environment at import.
            self._scoring_check(objective)
        note = environment_state(
            list(objective.environment_requirements or []), objective.environment_python
        )["python_note"]
        if note and version == objective.version:
            self.stdout.write(self.style.WARNING(note))

    def _test_score(self, **o):
        submission = (
            Submission.objects.select_related("task", "agent").filter(pk=o["submission"]).first()
        )
        if submission is None:
            raise CommandError(f"there is no submission {o['submission']}")
        try:
            result = objective_test_score_record(
                submission=submission, score=o["score"], source=o["source"]
            )
        except ExperimentRefused as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            self.style.SUCCESS(
                f"{submission.agent.name} (trial {result.trial}) on {submission.task.slug}: "
                f"test score {result.test_score:g} from {result.test_score_source}, "
                f"{result.relative_improvement:.2f}% relative improvement to human"
            )
        )

    def _list(self, **o):
        for objective in ObjectiveTask.objects.select_related("task"):
            direction = "higher" if objective.higher_is_better else "lower"
            state = environment_state(
                list(objective.environment_requirements or []), objective.environment_python
            )
            self.stdout.write(
                f"{objective.task.slug} ({objective.format} v{objective.version}): "
                f"{objective.metric} ({direction} is better), baseline "
                f"{objective.baseline_score:g}, human {objective.human_score:g}, "
                f"{objective.results.count()} agent(s) evaluated, environment "
                f"{state['status']}"
            )

    def _evaluate(self, **o):
        objective = (
            ObjectiveTask.objects.select_related("task").filter(task__slug=o["slug"]).first()
        )
        if objective is None:
            raise CommandError(f"there is no objective task {o['slug']}")
        agents = Agent.objects.filter(submissions__task=objective.task).distinct()
        if o["agent"]:
            agents = agents.filter(name=o["agent"])
            if not agents:
                raise CommandError(f"agent {o['agent']} has no submission for {o['slug']}")
        by_id = {agent.pk: agent for agent in agents}
        pending = [
            (by_id[a], trial)
            for a, trial in objective_trials_to_test(objective=objective)
            if a in by_id
        ]
        evaluated = ObjectiveResult.objects.filter(
            objective=objective, agent__in=agents, task_version=objective.version
        ).select_related("agent")
        for result in evaluated.order_by("agent__name", "trial"):
            label = f" (trial {result.trial})" if result.trial != 1 else ""
            self.stdout.write(f"{result.agent.name}{label}: already evaluated on test")
        queued = 0
        for agent, trial in pending:
            try:
                run = objective_test_queue(agent=agent, objective=objective, trial=trial)
            except ExperimentRefused as exc:
                self.stderr.write(self.style.WARNING(f"{agent.name}: {exc}"))
                continue
            queued += 1
            self.stdout.write(
                f"{agent.name} (trial {trial}): test run {run.pk} queued for submission "
                f"{run.submission_id}"
            )
        self.stdout.write(self.style.SUCCESS(f"{queued} test run(s) queued"))

    def _install(self, **o):
        report = objective_tasks_install(run_examples=o["examples"])
        counts = ", ".join(f"{n} {label}" for label, n in report.counts.items()) or "nothing"
        self.stdout.write(f"objective tasks: {counts}")
        for problem in report.problems:
            self.stderr.write(self.style.WARNING(f"  {problem}"))
