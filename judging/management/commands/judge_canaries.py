from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.errors import ApplicationError
from judging.models import Judge
from judging.services.canaries import (
    CANARY_STAGES,
    canaries_create,
    canaries_estimate,
    canaries_queue,
    kinds_parse,
)


class Command(BaseCommand):
    help = (
        "Planted fabrications that measure the judges. `create`: copy a seeded choice of a "
        "stage's submissions under the system agent, each with one fabrication of a known type "
        "(and one unchanged control). `run`: queue the judges' hallucination reviews of them, "
        "after saying how many calls and what they cost."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="plant fabrications in copies of submissions")
        create.add_argument("--stage", required=True, choices=CANARY_STAGES)
        create.add_argument("--count", type=int, default=10, help="how many submissions")
        create.add_argument("--seed", type=int, default=0, help="seed of the choice and plants")
        create.add_argument(
            "--kinds", default=None, help="comma-separated hallucination types (default: all four)"
        )
        run = actions.add_parser("run", help="queue the judges' hallucination reviews of them")
        run.add_argument("--judge", action="append", help="only this judge (repeatable)")
        run.add_argument("--yes", action="store_true", help="queue without asking")

    def handle(self, *args, **options) -> None:
        try:
            if options["action"] == "create":
                self._create(options)
            else:
                self._run(options)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc

    def _create(self, options) -> None:
        kinds = kinds_parse(options["kinds"]) if options["kinds"] is not None else None
        report = canaries_create(
            stage=options["stage"], count=options["count"], seed=options["seed"], kinds=kinds
        )
        for reason in report.skipped:
            self.stderr.write(self.style.WARNING(f"skipped: {reason}"))
        self.stdout.write(
            f"{len(report.sources)} submission(s) chosen: {len(report.created)} canary(ies) "
            f"made, {report.existing} already there, {len(report.skipped)} skipped"
        )

    def _run(self, options) -> None:
        judges = list(Judge.objects.filter(is_active=True))
        if options["judge"]:
            judges = list(Judge.objects.filter(name__in=options["judge"]))
            unknown = set(options["judge"]) - {judge.name for judge in judges}
            if unknown:
                raise CommandError(f"no judge named {', '.join(sorted(unknown))}")
        if not judges:
            raise CommandError("no active judge (add one with `manage.py judges add`)")
        estimates = canaries_estimate(judges=judges)
        calls = sum(e.calls for e in estimates)
        known = [e.cost_usd for e in estimates if e.cost_usd is not None]
        for e in estimates:
            cost = f"${e.cost_usd:.4f}" if e.cost_usd is not None else "unknown (no price)"
            self.stdout.write(
                f"  {e.judge}: {e.calls} call(s), about {e.input_tokens} input and "
                f"{e.output_tokens} output tokens, {cost}"
            )
        unpriced = len(known) < len(estimates)
        total = f"${sum(known):.4f}" + (" at least (a judge has no price)" if unpriced else "")
        self.stdout.write(f"{calls} call(s), estimated cost {total}")
        if not calls:
            self.stdout.write("nothing to queue")
            return
        if not options["yes"]:
            try:
                answer = input("Queue them? [y/N] ").strip().lower()
            except EOFError:  # no one to ask (a script without --yes)
                answer = ""
            if answer not in {"y", "yes"}:
                self.stdout.write("nothing queued")
                return
        report = canaries_queue(judges=judges)
        for reason in report.skipped:
            self.stderr.write(self.style.WARNING(f"skipped: {reason}"))
        self.stdout.write(
            f"queued {report.created} new and {report.requeued} again; "
            f"{report.unchanged} left as they were"
        )
