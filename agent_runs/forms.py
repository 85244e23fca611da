"""The organisers' page form for new agent runs, drawn from the API's input
(`AgentRunCreateSerializer`), which validates it: the page, the API and
`run_agent` take one definition of a new run."""

from __future__ import annotations

from django import forms

from benchmark.models import Task
from common.forms import serializer_form

from .serializers import AgentRunCreateSerializer


def _task_choices() -> list[tuple[str, str]]:
    return [
        (slug, f"{slug}: {title}")
        for slug, title in Task.objects.order_by("slug").values_list("slug", "title")
    ]


AgentRunForm = serializer_form(
    AgentRunCreateSerializer,
    choices={"task": _task_choices},
    widgets={"task": forms.SelectMultiple(attrs={"size": 12})},
)
