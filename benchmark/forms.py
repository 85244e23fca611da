from typing import Any

from django import forms
from django.db.models import QuerySet

from .accounts import AGENT_NAME_PATTERN, agents_of, teams_of
from .models import Agent, ModelFamily, Stage, Task, Team


def choices_limit(form: forms.BaseForm, name: str, queryset: QuerySet[Any]) -> None:
    """Narrow the choices of the form's model choice field `name` to `queryset`."""
    field = form.fields[name]
    assert isinstance(field, forms.ModelChoiceField), f"{name} is not a model choice field"
    field.queryset = queryset


class SubmissionUploadForm(forms.Form):
    agent = forms.ModelChoiceField(
        queryset=Agent.objects.none(), help_text="One of your teams' agents."
    )
    task = forms.CharField(
        max_length=100,
        help_text="Type to search the tasks; the value is the task's slug.",
        widget=forms.TextInput(attrs={"list": "task-options", "autocomplete": "off"}),
    )
    stage = forms.ChoiceField(choices=Stage.choices)
    archive = forms.FileField(
        help_text="A zip or tar.gz of the run's folder; a single .md file for an idea or proposal."
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        choices_limit(self, "agent", agents_of(user))

    def clean_task(self) -> Task:
        value = self.cleaned_data["task"].strip()
        # The datalist shows "slug: title"; accept either form.
        slug = value.split(":", 1)[0].strip()
        task = Task.objects.filter(slug=slug).first()
        if task is None:
            raise forms.ValidationError(f"No task {slug!r}; pick one from the list.")
        return task


class TeamForm(forms.Form):
    name = forms.CharField(max_length=120)


class AgentForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none())
    name = forms.RegexField(
        regex=AGENT_NAME_PATTERN,
        max_length=100,
        help_text="Unique, lower case: letters, digits, '.', '-', '_' (e.g. my-agent-v2).",
        error_messages={"invalid": "Use lower-case letters, digits, '.', '-' or '_'."},
    )
    display_name = forms.CharField(max_length=200)
    base_model = forms.CharField(
        max_length=200, required=False, help_text="As litellm names it, e.g. o4-mini."
    )
    coding_agent = forms.CharField(max_length=200, required=False)
    scaffold = forms.CharField(max_length=200, required=False, help_text="e.g. MLR-Agent")
    model_family = forms.ChoiceField(choices=ModelFamily.choices, initial=ModelFamily.OTHER)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    links = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="One URL a line."
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        choices_limit(self, "team", teams_of(user))

    def clean_links(self) -> list[str]:
        links = [line.strip() for line in self.cleaned_data["links"].splitlines() if line.strip()]
        validator = forms.URLField(assume_scheme="https")
        return [validator.clean(link) for link in links]


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. my laptop.")
