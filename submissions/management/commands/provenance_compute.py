"""Compute the provenance ledger (issue 38) of stored submissions: those from
before intake computed it, those whose ledger is stale (the rules changed) or
was not computed within the upload's budget.

    python manage.py provenance_compute                  # missing, stale, not computed
    python manage.py provenance_compute --all            # every submission with a paper
    python manage.py provenance_compute --submission 12 --submission 13
"""

from django.core.management.base import BaseCommand

from submissions.ledger import submission_ledger, submission_ledger_compute
from submissions.models import ArtifactKind, Submission
from submissions.provenance import counts_line


class Command(BaseCommand):
    help = "Compute the provenance ledger of stored submissions with a paper."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="compute every ledger again")
        parser.add_argument(
            "--submission", type=int, action="append", default=[], help="a submission id"
        )

    def handle(self, *args, all: bool, submission: list[int], **options):
        rows = Submission.objects.filter(artifacts__kind=ArtifactKind.PAPER).distinct()
        if submission:
            rows = rows.filter(pk__in=submission)
        done = 0
        for item in rows.order_by("pk").prefetch_related("artifacts"):
            stored = None if all else submission_ledger(submission=item, compute=False)
            if stored is not None and stored["status"] != "not computed":
                continue
            ledger = submission_ledger_compute(submission=item)
            done += 1
            self.stdout.write(
                f"submission {item.pk}: {ledger['status']}, {ledger['verdict']}; "
                f"{counts_line(ledger['counts'])}"
                + (f" ({ledger['note']})" if ledger["note"] else "")
            )
        self.stdout.write(f"{done} ledgers computed")
