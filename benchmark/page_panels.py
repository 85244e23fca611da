"""Panels that other apps add to the task page (objective results), named by
dotted path in `TASK_PAGE_PANELS`, so that `benchmark` never imports them. A
panel is `panel(*, request, task) -> SafeString`."""

from functools import cache

from django.conf import settings
from django.http import HttpRequest
from django.utils.module_loading import import_string
from django.utils.safestring import SafeString

from .models import Task


@cache
def dotted_paths_import(paths: tuple[str, ...]) -> list:
    """The functions named by dotted path in a setting, imported once."""
    return [import_string(path) for path in paths]


def task_page_panels(*, request: HttpRequest, task: Task) -> list[SafeString]:
    return [
        panel(request=request, task=task)
        for panel in dotted_paths_import(tuple(settings.TASK_PAGE_PANELS))
    ]
