"""Signal receivers connected in `JudgingConfig.ready()`."""

import logging

from .services.queue import submission_ready_judge
from .services.rubrics import rubric_forget

logger = logging.getLogger(__name__)


def submission_ready_receiver(sender, *, submission_id: int, **kwargs) -> None:
    """A submission's intake finished: queue it for every active judge."""
    report = submission_ready_judge(submission_id=submission_id)
    if report.skipped:
        logger.info("submission %s not judged: %s", submission_id, "; ".join(report.skipped))


def rubric_changed_receiver(sender, *, instance, **kwargs) -> None:
    """A rubric row was written or deleted in this process: forget the copy the
    judge runs keep (services.rubrics.rubric_by_id)."""
    rubric_forget(instance.pk)
