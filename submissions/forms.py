from django import forms

from benchmark.accounts import agents_of
from benchmark.forms import choices_limit, only_choice_preselect
from benchmark.models import Agent, Task

from .models import Stage


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
        only_choice_preselect(self, "agent")

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
