"""`manage.py provenance_evaluate`: the provenance verdict against the experts,
beside each judge's (leaderboard/provenance_detection.py)."""

from io import StringIO

import pytest
from django.core.management import call_command

from common.proportions import BinaryAgreement
from leaderboard.provenance_detection import DetectorScore, detection_lines, provenance_detection

pytestmark = pytest.mark.django_db


def test_precision_recall_and_wilson_intervals_per_detector():
    score = DetectorScore("experts", "end2end", "provenance", BinaryAgreement(4, 2, 1, 1, 0), 3)
    (header, line) = detection_lines([score])
    assert "precision [95% CI]" in header
    assert line.split()[:5] == ["experts", "end2end", "provenance", "4", "3"]
    assert "67% [" in line  # 2 of 3 called, 2 of 3 actual


def test_on_the_sample_the_ledger_is_measured_against_the_experts(sample):
    scores = provenance_detection(stages=("end2end",))
    experts = {s.detector: s for s in scores if s.reference == "experts"}
    ledger = experts["provenance"]
    # The experts checked MLR Agent (o4-mini, faked: Yes) and AI Scientist v2, whose
    # PDF paper without a trace gets no verdict: left out of n, counted apart.
    assert ledger.agreement.n == 1
    assert ledger.agreement.true_positive == 1
    assert ledger.no_verdict == 1
    out = StringIO()
    call_command("provenance_evaluate", "--stage", "end2end", stdout=out)
    assert "provenance" in out.getvalue()
    assert "Rule: a ledger flags fabrication" in out.getvalue()
