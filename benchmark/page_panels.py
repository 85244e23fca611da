"""Panels that other apps add to the task page (objective results), named by
dotted path in `TASK_PAGE_PANELS`, so that `benchmark` never imports them. A
panel is `panel(*, request, task) -> SafeString`."""

from django.http import HttpRequest
from django.utils.safestring import SafeString

from common.hooks import setting_callables

from .models import Task


def task_page_panels(*, request: HttpRequest, task: Task) -> list[SafeString]:
    return [panel(request=request, task=task) for panel in setting_callables("TASK_PAGE_PANELS")]
