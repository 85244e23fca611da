from django.conf import settings
from django.core.management.base import BaseCommand

from judging.services.queue import judgments_reap_stuck


class Command(BaseCommand):
    help = (
        "Requeue judgments `running` whose worker has been silent (no heartbeat) for "
        "JUDGE_LEASE_STALE_SECONDS: it was killed. Celery beat also runs this periodically."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than",
            type=float,
            default=None,
            help=(
                "seconds without a heartbeat (default: JUDGE_LEASE_STALE_SECONDS = "
                f"{settings.JUDGE_LEASE_STALE_SECONDS})"
            ),
        )

    def handle(self, *args, older_than: float | None, **options):
        requeued = judgments_reap_stuck(older_than=older_than)
        if requeued:
            ids = ", ".join(str(pk) for pk in requeued)
            self.stdout.write(self.style.SUCCESS(f"requeued {len(requeued)} judgment(s): {ids}"))
        else:
            self.stdout.write("no stuck judgment")
