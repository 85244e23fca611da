"""The human score line of benchmark's submission page summary (see
benchmark/page_panels.py): only released reviews, as on every public page."""

from submissions.models import Submission
from submissions.page_panels import SummaryItem

from .selectors import human_overall_by_submission, released_reviews


def human_review_summary(*, submission: Submission) -> list[SummaryItem]:
    overall = human_overall_by_submission(submission_ids=[submission.pk]).get(submission.pk)
    if overall is None:
        return []
    n = released_reviews().filter(submission=submission).count()
    return [
        SummaryItem(
            key="human-score",
            label="Human score",
            value=f"{overall:.1f} / 10 (Overall, mean of {n} released "
            f"review{'s' if n != 1 else ''})",
        )
    ]
