"""Start-up checks of the judge queue's settings: limits that contradict each
other fail every enqueue after commit (Celery refuses a soft time limit above
the hard one), so they are refused when the site or a worker starts."""

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

# The task's soft limit is the service's own soft limit plus this margin.
SOFT_LIMIT_MARGIN_SECONDS = 30


@register()
def judge_time_limits_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    soft = settings.JUDGE_TASK_SOFT_TIME_LIMIT
    hard = settings.JUDGE_TASK_TIME_LIMIT
    if soft <= 0 or hard <= 0:
        errors.append(
            Error(
                "JUDGE_TASK_SOFT_TIME_LIMIT and JUDGE_TASK_TIME_LIMIT must be positive.",
                id="judging.E001",
            )
        )
    if soft + SOFT_LIMIT_MARGIN_SECONDS > hard:
        errors.append(
            Error(
                f"JUDGE_TASK_TIME_LIMIT ({hard} s) must be at least JUDGE_TASK_SOFT_TIME_LIMIT "
                f"+ {SOFT_LIMIT_MARGIN_SECONDS} s ({soft + SOFT_LIMIT_MARGIN_SECONDS} s): the "
                "judge task's soft limit is the service's plus that margin, and Celery refuses "
                "every message whose soft limit is above its hard limit.",
                hint="Raise JUDGE_TASK_TIME_LIMIT or lower JUDGE_TASK_SOFT_TIME_LIMIT.",
                id="judging.E002",
            )
        )
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout")
    if visibility is not None and visibility <= hard:
        errors.append(
            Error(
                f"CELERY_VISIBILITY_TIMEOUT ({visibility} s) must outlast JUDGE_TASK_TIME_LIMIT "
                f"({hard} s), or the broker hands a running judgment to a second worker.",
                id="judging.E003",
            )
        )
    if settings.JUDGE_REAP_INTERVAL_SECONDS <= 0 or settings.JUDGE_RESEND_QUEUED_SECONDS <= 0:
        errors.append(
            Error(
                "JUDGE_REAP_INTERVAL_SECONDS and JUDGE_RESEND_QUEUED_SECONDS must be positive.",
                id="judging.E004",
            )
        )
    return errors
