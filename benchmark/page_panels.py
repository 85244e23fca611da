"""Panels that other apps add to benchmark's pages (the judges' scores and the
experiment runs on the submission page, objective results on the task page),
named by dotted path in `SUBMISSION_PAGE_PANELS` and `TASK_PAGE_PANELS`, so
that `benchmark` never imports them. A panel is
`panel(*, request, submission) -> SafeString` (or `task=` on the task page)."""

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
