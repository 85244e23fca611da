"""Panels that other apps add to the submission page (the judges' scores, the
experiment runs), named by dotted path in `SUBMISSION_PAGE_PANELS`, so that
`submissions` never imports them. A panel is
`panel(*, request, submission) -> SafeString`.
`SUBMISSION_NOTICES` names `notice(*, submission) -> list[str]`: what an
uploader should know about a new submission (e.g. that no judge is active),
given in the upload API's answer. `SUBMISSION_SUMMARY` names
`summary(*, submission) -> list[SummaryItem]`: lines of the summary at the top
of the submission page (stage score, human score, reproduction verdict)."""

from dataclasses import dataclass

from django.http import HttpRequest
from django.utils.safestring import SafeString

from common.hooks import setting_callables

from .models import Submission


def submission_page_panels(*, request: HttpRequest, submission: Submission) -> list[SafeString]:
    return [
        panel(request=request, submission=submission)
        for panel in setting_callables("SUBMISSION_PAGE_PANELS")
    ]


def submission_notices(*, submission: Submission) -> list[str]:
    return [
        notice
        for provider in setting_callables("SUBMISSION_NOTICES")
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
        for provider in setting_callables("SUBMISSION_SUMMARY")
        for item in provider(submission=submission)
    ]
