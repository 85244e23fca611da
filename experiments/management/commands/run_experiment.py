from django.core.management.base import BaseCommand, CommandError

from common.polling import poll_until
from experiments.environments import objective_environment_build
from experiments.errors import EnvironmentInvalid, ExperimentRefused
from experiments.models import ExperimentPhase, ExperimentRun, ExperimentStatus
from experiments.queue import experiment_queue
from experiments.selectors import experiment_log_chunk
from submissions.models import Submission

# How long --wait waits, after the run ends, for its reproduction check.
CHECK_WAIT_SECONDS = 30


class Command(BaseCommand):
    help = (
        "Queue a sandboxed run of a submission's code on the `gpu` queue: `dev` runs a "
        "method on its objective task's dev data, `test` evaluates the agent's best dev run "
        "once on the test data, `repro` re-runs an experiment and checks the paper's "
        "numbers. With --wait, follow the run's log until it ends."
    )

    def add_arguments(self, parser):
        parser.add_argument("--submission", type=int, required=True, metavar="ID")
        parser.add_argument("--phase", required=True, choices=ExperimentPhase.values)
        parser.add_argument("--command", help="repro: the command to run instead of run.sh")
        parser.add_argument("--gpus", type=int, help="GPUs the run asks for")
        parser.add_argument("--time-limit", type=int, metavar="SECONDS")
        parser.add_argument("--wait", action="store_true", help="follow the log until the end")
        parser.add_argument(
            "--build-env",
            action="store_true",
            help="dev/test: build the objective task's environment first when it is missing",
        )

    def handle(self, *args, **options):
        submission = (
            Submission.objects.select_related("agent", "task")
            .filter(pk=options["submission"])
            .first()
        )
        if submission is None:
            raise CommandError(f"there is no submission {options['submission']}")
        objective = getattr(submission.task, "objective", None)
        if options["build_env"] and objective is not None:
            try:
                objective_environment_build(
                    objective=objective,
                    progress=lambda line: self.stdout.write(f"  | {line}"),
                )
            except (EnvironmentInvalid, ExperimentRefused) as exc:
                problems = getattr(exc, "problems", None) or [str(exc)]
                raise CommandError("the environment was not built: " + "; ".join(problems)) from exc
        try:
            run = experiment_queue(
                submission=submission,
                phase=options["phase"],
                command=options["command"],
                gpu_count=options["gpus"],
                time_limit_seconds=options["time_limit"],
            )
        except ExperimentRefused as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"run {run.pk} ({run.phase}) of submission {run.submission_id} queued: {run.command}"
        )
        if not options["wait"]:
            return
        offset = 0

        def log_to_end() -> ExperimentRun | None:
            """What the log has now, written out; the run once it ended and all is written."""
            nonlocal offset
            while True:
                latest = ExperimentRun.objects.select_related("reproduction").get(pk=run.pk)
                chunk = experiment_log_chunk(run=latest, offset=offset)
                if chunk.text:
                    self.stdout.write(chunk.text, ending="")
                    self.stdout.flush()
                offset = chunk.offset
                if latest.is_finished and offset >= chunk.size:
                    return latest
                if not chunk.text:
                    return None

        finished = poll_until(log_to_end, every=0.5)
        assert finished is not None  # no timeout: it waits for the end
        self._summary(self._with_check(finished))

    def _with_check(self, run: ExperimentRun) -> ExperimentRun:
        """The run once its reproduction check is recorded too: the worker
        records it just after it marks the run finished (or as it was, after
        CHECK_WAIT_SECONDS)."""
        if run.phase != ExperimentPhase.REPRO or getattr(run, "reproduction", None) is not None:
            return run
        latest = run

        def recorded() -> ExperimentRun | None:
            nonlocal latest
            latest = ExperimentRun.objects.select_related("reproduction").get(pk=run.pk)
            return latest if getattr(latest, "reproduction", None) is not None else None

        return poll_until(recorded, every=0.5, timeout=CHECK_WAIT_SECONDS) or latest

    def _summary(self, run: ExperimentRun) -> None:
        detail = f" ({run.get_limit_hit_display()} limit)" if run.limit_hit else ""
        line = f"run {run.pk}: {run.status}{detail}"
        if run.reason:
            line += f": {run.reason}"
        style = self.style.SUCCESS if run.status == ExperimentStatus.SUCCEEDED else self.style.ERROR
        self.stdout.write(style(line))
        if run.score is not None:
            self.stdout.write(f"score: {run.score:g}")
        if run.metrics:
            self.stdout.write(f"metrics: {run.metrics}")
        check = getattr(run, "reproduction", None)
        if check is not None:
            self.stdout.write(f"reproduction: {check.verdict}: {check.summary}")
        if run.status != ExperimentStatus.SUCCEEDED:
            raise CommandError(f"run {run.pk} {run.status}")
