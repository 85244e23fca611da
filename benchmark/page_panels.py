"""Panels that other apps add to benchmark's pages (the judges' scores and the
experiment runs on the submission page, objective results on the task page),
named by dotted path in `SUBMISSION_PAGE_PANELS` and `TASK_PAGE_PANELS`, so
that `benchmark` never imports them. A panel is
`panel(*, request, submission) -> SafeString` (or `task=` on the task page).
`SUBMISSION_NOTICES` names `notice(*, submission) -> list[str]`: what an
uploader should know about a new submission (e.g. that no judge is active),
given in the upload API's answer. `SUBMISSION_SUMMARY` names
`summary(*, submission) -> list[SummaryItem]`: lines of the summary at the top
of the submission page (stage score, human score, reproduction verdict)."""

from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.http import HttpRequest
from django.utils.module_loading import import_string
from django.utils.safestring import SafeString

from .models import Submission, Task


@cache
def _panels(paths: tuple[str, ...]) -> list:
    return [import_string(path) for path in paths]


def submission_page_panels(*, request: HttpRequest, submission: Submission) -> list[SafeString]:
    return [
        panel(request=request, submission=submission)
        for panel in _panels(tuple(settings.SUBMISSION_PAGE_PANELS))
    ]


def task_page_panels(*, request: HttpRequest, task: Task) -> list[SafeString]:
    return [
        panel(request=request, task=task) for panel in _panels(tuple(settings.TASK_PAGE_PANELS))
    ]


def submission_notices(*, submission: Submission) -> list[str]:
    return [
        notice
        for provider in _panels(tuple(getattr(settings, "SUBMISSION_NOTICES", ())))
        for notice in provider(submission=submission)
    ]


@dataclass(frozen=True)
class SummaryItem:
    """One line of the submission page's summary: `value` is plain text,
    `href` the section of the page (or another page) that has the details."""

    key: str
    label: str
    value: str
    href: str = ""
    flag: bool = False  # shown as a warning (fabrication found, not reproduced)


def submission_summary(*, submission: Submission) -> list[SummaryItem]:
    return [
        item
        for provider in _panels(tuple(getattr(settings, "SUBMISSION_SUMMARY", ())))
        for item in provider(submission=submission)
    ]
