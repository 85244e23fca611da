"""The leaderboard's controls, one form for the page and the API, so that
`?stage=paper&judge=...&common_tasks=1` means the same in both."""

from django import forms

from benchmark.models import Conference, Topic
from experiments.mlrc import IDEA_SOURCE_RE
from judging.models import Judge, JudgePanel, JudgingCondition
from submissions.models import Stage

from .selectors.board import LeaderboardQuery
from .selectors.counting import LEADERBOARD_STAGES
from .selectors.objective import OBJECTIVE_STAGE

STAGE_CHOICES = [(s, label) for s, label in Stage.choices if s in LEADERBOARD_STAGES]
# The leaderboard's tabs: the judged stages, then the objective tasks.
BOARD_CHOICES = [*STAGE_CHOICES, (OBJECTIVE_STAGE, "Objective")]


class LeaderboardQueryForm(forms.Form):
    stage = forms.ChoiceField(choices=BOARD_CHOICES, required=False)
    conference = forms.ChoiceField(choices=[("", "Any")] + Conference.choices, required=False)
    year = forms.IntegerField(required=False, min_value=2000, max_value=2100)
    topic = forms.ChoiceField(choices=[("", "Any")] + Topic.choices, required=False)
    judge = forms.ModelChoiceField(
        queryset=Judge.objects.order_by("name"),
        to_field_name="name",
        required=False,
        empty_label="Mean of judges",
    )
    panel = forms.ModelChoiceField(
        queryset=JudgePanel.objects.order_by("name"),
        to_field_name="name",
        required=False,
        empty_label="The stage's default panel",
        label="Judge panel",
    )
    condition = forms.ChoiceField(
        choices=JudgingCondition.choices, required=False, label="Judged with"
    )
    exclude_same_family = forms.BooleanField(required=False, label="Leave out same-family judges")
    common_tasks = forms.BooleanField(required=False, label="Only tasks every listed agent has")
    fabrication_rule = forms.ChoiceField(
        choices=[
            ("any", "Any judge flags it"),
            ("majority", "A majority of judges"),
            ("all", "Every judge"),
        ],
        required=False,
        label="Fabricated when",
    )
    task = forms.SlugField(required=False, widget=forms.HiddenInput)
    sort = forms.RegexField(
        regex=r"^-?[A-Za-z0-9_.-]{1,64}$", required=False, widget=forms.HiddenInput
    )

    def leaderboard_query(self) -> LeaderboardQuery:
        data = self.cleaned_data
        judge = data.get("judge")
        return LeaderboardQuery(
            stage=data.get("stage") or Stage.END2END,
            condition=data.get("condition") or JudgingCondition.WITH_CODE,
            conference=data.get("conference") or "",
            year=data.get("year"),
            topic=data.get("topic") or "",
            task=data.get("task") or "",
            judge=judge.name if judge else "",
            exclude_same_family=bool(data.get("exclude_same_family")),
            common_tasks=bool(data.get("common_tasks")),
            fabrication_rule=data.get("fabrication_rule") or "any",
            panel=panel.name if (panel := data.get("panel")) else "",
        )


class AgentCompareForm(LeaderboardQueryForm):
    """A board's filters and the two agents to compare (`a` minus `b`)."""

    stage = forms.ChoiceField(choices=STAGE_CHOICES, required=False)
    a = forms.CharField(max_length=100)
    b = forms.CharField(max_length=100)


class ObjectiveQueryForm(forms.Form):
    """The objective tab's filter (page and API): one configuration's trials."""

    idea_source = forms.CharField(
        max_length=40,
        required=False,
        label="Configuration",
        help_text="Where the method's idea came from: none, human, agent or a label such as coi.",
    )

    def clean_idea_source(self) -> str:
        value = (self.cleaned_data.get("idea_source") or "").strip().lower()
        if value and not IDEA_SOURCE_RE.match(value):
            raise forms.ValidationError(
                "a configuration is none, human, agent or a short label such as coi "
                "(lowercase letters, digits, _ . -)",
                code="invalid_idea_source",
            )
        return value
