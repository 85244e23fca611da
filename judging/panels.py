"""The judges' panel on the submission page (see benchmark/page_panels.py)."""

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from benchmark.models import Submission

from .selectors import judgments_panel_context


def judgments_panel(*, request: HttpRequest, submission: Submission) -> SafeString:
    html = render_to_string(
        "judging/_judgments_panel.html",
        {"judging": judgments_panel_context(submission), "return_to": request.get_full_path()},
        request=request,
    )
    return mark_safe(html)  # noqa: S308 - a template rendered with autoescaping
