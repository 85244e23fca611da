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
    based_on = forms.CharField(
        required=False,
        max_length=400,
        label="Based on",
        help_text="Ids of the earlier-stage submissions of this task the run was built on, "
        "comma separated (e.g. 12, 40). Or put based_on.json in the archive.",
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        choices_limit(self, "agent", agents_of(user))
        _only_choice_preselect(self, "agent")

    def clean_task(self) -> Task:
        value = self.cleaned_data["task"].strip()
        # The datalist shows "slug: title"; accept either form.
        slug = value.split(":", 1)[0].strip()
        task = Task.objects.filter(slug=slug).first()
        if task is None:
            raise forms.ValidationError(f"No task {slug!r}; pick one from the list.")
        return task

    def clean_based_on(self) -> list[int]:
        parts = [part.strip() for part in self.cleaned_data["based_on"].split(",")]
        ids = [part for part in parts if part]
        if not all(part.isdigit() for part in ids):
            raise forms.ValidationError("Submission ids, comma separated (e.g. 12, 40).")
        return [int(part) for part in ids]


def _only_choice_preselect(form: forms.BaseForm, name: str) -> None:
    """With a single choice there is nothing to choose: it is the initial value."""
    field = form.fields[name]
    assert isinstance(field, forms.ModelChoiceField)
    if form.is_bound or form.initial.get(name):
        return
    choices = list(field.queryset[:2]) if field.queryset is not None else []
    if len(choices) == 1:
        form.initial[name] = choices[0].pk


# Name fragments first (an `openai/...` model served by vLLM may be a Qwen),
# then the provider litellm routes the model to.
_FAMILY_BY_NAME = (
    ("claude", ModelFamily.ANTHROPIC),
    ("gemini", ModelFamily.GOOGLE),
    ("gemma", ModelFamily.GOOGLE),
    ("deepseek", ModelFamily.DEEPSEEK),
    ("qwen", ModelFamily.QWEN),
    ("qwq", ModelFamily.QWEN),
    ("mistral", ModelFamily.MISTRAL),
    ("mixtral", ModelFamily.MISTRAL),
    ("codestral", ModelFamily.MISTRAL),
    ("llama", ModelFamily.META),
    ("gpt", ModelFamily.OPENAI),
    ("o1", ModelFamily.OPENAI),
    ("o3", ModelFamily.OPENAI),
    ("o4", ModelFamily.OPENAI),
)
_FAMILY_BY_PROVIDER = {
    "anthropic": ModelFamily.ANTHROPIC,
    "openai": ModelFamily.OPENAI,
    "azure": ModelFamily.OPENAI,
    "gemini": ModelFamily.GOOGLE,
    "vertex_ai": ModelFamily.GOOGLE,
    "deepseek": ModelFamily.DEEPSEEK,
    "dashscope": ModelFamily.QWEN,
    "mistral": ModelFamily.MISTRAL,
}


def model_family_guess(base_model: str) -> str:
    """The model family of a base model as litellm names it (`o4-mini`,
    `anthropic/claude-3-7-sonnet-20250219`); `other` when unknown."""
    name = base_model.strip().lower()
    if not name:
        return ModelFamily.OTHER
    tail = name.rsplit("/", 1)[-1]
    for fragment, family in _FAMILY_BY_NAME:
        # Short fragments only at the start: "o1" is in "gemma-o1x" by accident.
        if tail.startswith(fragment) if len(fragment) <= 3 else fragment in tail:
            return family
    from common.llm import model_provider

    provider = model_provider(name)
    if provider is None:  # a name litellm cannot route
        return ModelFamily.OTHER
    return _FAMILY_BY_PROVIDER.get(provider, ModelFamily.OTHER)


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
    model_family = forms.ChoiceField(
        choices=[("", "Guess from the base model"), *ModelFamily.choices],
        required=False,
        help_text="Left to guess: from the base model's name and its provider in litellm.",
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    links = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="One URL a line."
    )

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        choices_limit(self, "team", teams_of(user))
        _only_choice_preselect(self, "team")

    def clean_model_family(self) -> str:
        return self.cleaned_data["model_family"] or model_family_guess(
            self.data.get("base_model", "")
        )

    def clean_links(self) -> list[str]:
        links = [line.strip() for line in self.cleaned_data["links"].splitlines() if line.strip()]
        validator = forms.URLField(assume_scheme="https")
        return [validator.clean(link) for link in links]


class ApiTokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, label="Token name", help_text="What the token is for, e.g. my laptop."
    )
