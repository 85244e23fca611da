from django.core.management.base import BaseCommand, CommandError

from judging.models import Judge
from judging.services.drift import BIG_CHANGE, judge_drift_check


class Command(BaseCommand):
    help = (
        "Score again a seeded sample of a judge's finished judgments (same rubric "
        "version and prompt) into a drift record, and report how much the scores moved."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--judge", required=True, help="The judge's name.")
        parser.add_argument("--sample", type=int, default=20, help="How many judgments.")
        parser.add_argument("--seed", type=int, default=0, help="Seed of the sample.")

    def handle(self, *args, **options) -> None:
        if options["sample"] < 1:
            raise CommandError("--sample must be at least 1")
        try:
            check = judge_drift_check(
                judge_name=options["judge"], sample=options["sample"], seed=options["seed"]
            )
        except Judge.DoesNotExist as exc:
            raise CommandError(f"no judge named {options['judge']!r}") from exc
        self.stdout.write(
            f"{check.judge.name}: {check.n_rescored} judgment(s) scored again, "
            f"{check.n_failed} failed"
        )
        for dimension, change in check.mean_abs_change.items():
            self.stdout.write(
                f"  {dimension}: mean |change| {change:.3f}, "
                f"{check.n_changed_2plus.get(dimension, 0)} moved by {BIG_CHANGE:g} or more"
            )
        if check.flagged:
            self.stdout.write(
                self.style.WARNING(f"flagged: drift above the threshold {check.threshold:g}")
            )
