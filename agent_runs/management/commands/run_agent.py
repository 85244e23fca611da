from django.core.management.base import BaseCommand, CommandError

from agent_runs.models import STEPWISE_STAGES, AgentRun, RunMode
from agent_runs.serializers import AgentRunCreateSerializer, run_arguments
from agent_runs.services import agent_run_create
from common.errors import ValidationFailed
from common.polling import poll_until

FIELDS = tuple(AgentRunCreateSerializer().fields)


class Command(BaseCommand):
    help = (
        "Run the reference MLR-Agent on tasks: idea, literature review, proposal, the "
        "coding loop in the sandbox, paper; the run's folder is stored as a submission "
        "through the normal intake. Without a broker it runs here, inline."
    )

    def add_arguments(self, parser):
        parser.add_argument("--task", action="append", required=True, metavar="SLUG")
        parser.add_argument("--agent", required=True, metavar="NAME")
        parser.add_argument("--model", required=True, help="the idea, proposal and paper model")
        parser.add_argument("--api-base", metavar="URL")
        parser.add_argument("--api-key-env", metavar="VAR")
        parser.add_argument("--coding-model", metavar="M")
        lit = parser.add_mutually_exclusive_group()
        lit.add_argument("--lit-model", metavar="M")
        lit.add_argument("--no-lit-review", action="store_true")
        parser.add_argument("--mode", choices=RunMode.values)
        parser.add_argument("--stage", choices=STEPWISE_STAGES, metavar="S")
        parser.add_argument("--input", action="append", metavar="SUBMISSION_ID")
        parser.add_argument("--max-steps", metavar="N")
        parser.add_argument("--max-tokens", metavar="N")
        parser.add_argument("--max-cost", metavar="USD")
        parser.add_argument("--seed", metavar="N")
        parser.add_argument("--wait", action="store_true", help="wait until every run ends")
        parser.add_argument(
            "--no-check",
            action="store_true",
            help="queue without first calling each model once (a key, server and model check)",
        )

    def handle(self, *args, **options):
        # The flags are the API's fields (`AgentRunCreateSerializer`), spelled as flags:
        # one definition of what a new run takes, its defaults and its limits.
        given = {name: options[name] for name in FIELDS if options.get(name) is not None}
        serializer = AgentRunCreateSerializer(data=given)
        if not serializer.is_valid():
            raise CommandError(
                "; ".join(
                    f"{name}: {' '.join(str(error) for error in errors)}"
                    for name, errors in serializer.errors.items()
                )
            )
        try:
            runs = agent_run_create(
                **run_arguments(serializer.validated_data), check_models=not options["no_check"]
            )
        except ValidationFailed as exc:
            raise CommandError(
                "; ".join(f"{item.field or 'input'}: {item.message}" for item in exc.items)
            ) from exc
        for run in runs:
            self.stdout.write(f"agent run {run.pk} on {run.task.slug} queued ({run.mode})")
        if options["wait"]:
            self._wait([run.pk for run in runs])

    def _wait(self, ids: list[int]) -> None:
        reported: dict[tuple[int, str], str] = {}
        failed = False

        def finished() -> list[AgentRun] | None:
            runs = list(AgentRun.objects.filter(pk__in=ids).prefetch_related("stages"))
            for run in runs:
                for stage in run.stages.all():
                    if reported.get((run.pk, stage.name)) != stage.status:
                        reported[(run.pk, stage.name)] = stage.status
                        note = f": {stage.note or stage.error}" if stage.note or stage.error else ""
                        self.stdout.write(f"run {run.pk} {stage.name}: {stage.status}{note}")
            return runs if all(run.is_final for run in runs) else None

        runs = poll_until(finished, every=1) or []
        for run in runs:
            cost = f"${run.cost_usd:.4f}" + (" (at least)" if run.unpriced_calls else "")
            line = f"run {run.pk}: {run.status}, {run.tokens} tokens, {cost}"
            if run.submission_id:
                line += f", submission {run.submission_id}"
            if run.reason:
                line += f" ({run.failed_stage}: {run.reason})"
            self.stdout.write(line)
            failed = failed or run.status != "finished"
        if failed:
            raise CommandError("a run did not finish")
