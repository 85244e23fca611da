"""How well the provenance ledger's verdict detects fabrication, beside each
judge's, against the experts' `is_Faked_Experimental_Result` and the planted
canaries (issue 38): precision, recall, 95% Wilson intervals and n per detector.

    python manage.py provenance_evaluate                 # experiment, paper, end2end
    python manage.py provenance_evaluate --stage end2end
"""

from django.core.management.base import BaseCommand

from leaderboard.provenance_detection import detection_lines, provenance_detection
from leaderboard.selectors.fabrication import FABRICATION_STAGES


class Command(BaseCommand):
    help = "Compare the provenance verdict with the experts, the judges and the canaries."

    def add_arguments(self, parser):
        parser.add_argument("--stage", choices=FABRICATION_STAGES, action="append")

    def handle(self, *args, stage: list[str] | None, **options):
        scores = provenance_detection(stages=tuple(stage or FABRICATION_STAGES))
        for line in detection_lines(scores):
            self.stdout.write(line)
        self.stdout.write(
            "Rule: a ledger flags fabrication when at least one result number of two or "
            "more significant digits is written or hard-coded; no trace or no paper: no "
            "verdict (left out of n)."
        )
