"""A task's description as clean HTML: rendered once per text (when the task is
saved, or on first view of a text that changed) and stored on the task."""

import hashlib

from django.utils.safestring import SafeString, mark_safe

from common.rendering import markdown_render_budgeted

from .models import Task
from .task_files import task_description_body


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _task_text(task: Task) -> str:
    # The page shows the title as its own heading: the description without it.
    return task_description_body(task.description, task.title)


def task_description_html(task: Task) -> SafeString:
    """The task's description as clean HTML, rendered once per text."""
    text = _task_text(task)
    digest = _sha256(text)
    if task.description_html_sha256 != digest:
        task.description_html = markdown_render_budgeted(text).html
        task.description_html_sha256 = digest
        Task.objects.filter(pk=task.pk).update(
            description_html=task.description_html, description_html_sha256=digest
        )
    return mark_safe(task.description_html)  # noqa: S308 - cleaned when rendered


def task_description_derive(task: Task) -> None:
    """Set the task's rendered description (before it is saved)."""
    text = _task_text(task)
    task.description_html = markdown_render_budgeted(text).html
    task.description_html_sha256 = _sha256(text)
