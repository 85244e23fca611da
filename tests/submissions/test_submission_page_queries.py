"""The submission page's queries do not grow with what it shows: an imported
end-to-end run with its files, its judges' judgments (with and without code)
and a coding-agent trace is read in a fixed number of queries, for a visitor
signed out and for staff (perf/adversarial.py times the page against
/healthz; issue 32's goal is at most 10x)."""

import pytest

from benchmark.roles import organiser_grant
from submissions.models import ArtifactKind, Stage, Submission
from tests.benchmark.factories import UserFactory

pytestmark = pytest.mark.django_db

# The visibility hook (open review rounds), the submission with its state, its
# files, their stored HTML, the price table, the experiment runs; the judgments
# with their scores and findings, the stage's panel and its judges, the active
# judges, the stage score with code and without; the reproduction verdict, the
# human score and its count of reviews, the lineage, the paper's provenance ledger
# (issue 38). (42 before issue 32.)
ANONYMOUS_QUERIES = 19
# And the session, the user, their groups and the reviewer's blind papers. (48 before.)
STAFF_QUERIES = 23


def _end_to_end_runs() -> list[Submission]:
    runs = list(
        Submission.objects.filter(
            stage=Stage.END2END,
            judgments__isnull=False,
            artifacts__kind=ArtifactKind.TRACE,
        )
        .distinct()
        .order_by("pk")
    )
    assert runs, "the sample has end-to-end runs with judgments and a trace"
    return runs


def _page(client, submission: Submission) -> str:
    response = client.get(f"/submissions/{submission.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def _shows_everything(page: str) -> None:
    for testid in ("judgments-panel", "trace-links", "file-tree", "paper", "summary-stage-score"):
        assert f'data-testid="{testid}"' in page, testid


def test_an_imported_run_page_reads_a_fixed_number_of_queries_signed_out(
    client, sample, django_assert_max_num_queries
):
    for submission in _end_to_end_runs():
        with django_assert_max_num_queries(ANONYMOUS_QUERIES):
            page = _page(client, submission)
        _shows_everything(page)


def test_an_imported_run_page_reads_a_fixed_number_of_queries_for_staff(
    client, sample, django_assert_max_num_queries
):
    organiser = UserFactory(username="organiser-staff")
    organiser_grant(user=organiser)
    client.force_login(organiser)
    for submission in _end_to_end_runs():
        with django_assert_max_num_queries(STAFF_QUERIES):
            page = _page(client, submission)
        _shows_everything(page)
