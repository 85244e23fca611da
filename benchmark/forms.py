from typing import Any

from django import forms
from django.db.models import QuerySet

from .accounts import AGENT_NAME_PATTERN, teams_of
from .models import ModelFamily, Team


def choices_limit(form: forms.BaseForm, name: str, queryset: QuerySet[Any]) -> None:
    """Narrow the choices of the form's model choice field `name` to `queryset`."""
    field = form.fields[name]
    assert isinstance(field, forms.ModelChoiceField), f"{name} is not a model choice field"
    field.queryset = queryset


def only_choice_preselect(form: forms.BaseForm, name: str) -> None:
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
        only_choice_preselect(self, "team")

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
