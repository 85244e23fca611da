"""The organisers' form for new agent runs. Its fields carry the names of the
service's error fields (and of `run_agent`'s flags), so that `form_add_errors`
puts each of `agent_run_create`'s messages beside its field; the form checks
only what the service cannot see (a number that is not a number, a value
beyond the columns' range)."""

from __future__ import annotations

from typing import Any

from django import forms

from benchmark.models import Task

from .models import STEPWISE_STAGES, RunMode
from .serializers import INT_MAX


class _AnyTaskField(forms.MultipleChoiceField):
    """The catalogue's tasks to choose from; a slug that is not one is left for the
    service to refuse, in its own words."""

    def valid_value(self, value: str) -> bool:
        return True


class _InputIdsField(forms.CharField):
    def to_python(self, value: Any) -> list[int]:  # type: ignore[override]
        text = super().to_python(value) or ""
        ids = []
        for part in text.replace(",", " ").split():
            if not part.isdigit() or not 1 <= int(part) <= INT_MAX:
                raise forms.ValidationError(f"{part!r} is not a submission id", code="invalid")
            ids.append(int(part))
        return ids


class AgentRunForm(forms.Form):
    task = _AnyTaskField(
        label="Tasks",
        required=False,
        help_text="One run per task (Ctrl- or Cmd-click to choose several).",
        widget=forms.SelectMultiple(attrs={"size": 12}),
    )
    agent = forms.CharField(
        max_length=100,
        required=False,
        initial="mlr-agent",
        help_text="Registered in the organisers' MLR-Agent team when new.",
    )
    model = forms.CharField(max_length=200, required=False, label="Idea, proposal and paper model")
    lit_model = forms.CharField(
        max_length=200,
        required=False,
        label="Literature-review model",
        help_text="A search-capable model; empty: the main model.",
    )
    no_lit_review = forms.BooleanField(required=False, label="No literature review")
    coding_model = forms.CharField(
        max_length=200, required=False, help_text="The coding loop's model; empty: the main model."
    )
    api_base = forms.CharField(
        max_length=500,
        required=False,
        label="API base URL",
        help_text="An OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1); empty: the "
        "provider's.",
    )
    api_key_env = forms.CharField(
        max_length=100,
        required=False,
        label="API key variable",
        help_text="The NAME of the environment variable that holds the key, never the key.",
    )
    mode = forms.ChoiceField(choices=RunMode.choices, initial=RunMode.END2END)
    stage = forms.ChoiceField(
        choices=[("", "—"), *((stage, stage) for stage in STEPWISE_STAGES)],
        required=False,
        help_text="Stepwise only: the stage the run produces.",
    )
    input = _InputIdsField(
        required=False,
        label="Input submissions",
        help_text="Stepwise only: ids of the previous stage's submissions to build on "
        "(empty: sampled with the seed).",
    )
    max_steps = forms.IntegerField(initial=50, max_value=INT_MAX, label="Max steps")
    max_tokens = forms.IntegerField(required=False, max_value=INT_MAX, label="Max tokens")
    max_cost = forms.DecimalField(
        required=False, max_digits=10, decimal_places=4, label="Max cost (USD)"
    )
    seed = forms.IntegerField(initial=0, min_value=-INT_MAX, max_value=INT_MAX)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        task_field = self.fields["task"]
        assert isinstance(task_field, forms.MultipleChoiceField)
        task_field.choices = [
            (slug, f"{slug}: {title}")
            for slug, title in Task.objects.order_by("slug").values_list("slug", "title")
        ]
