"""The review form is built from the rubric of the paper's stage: one score
per dimension within the rubric's range, confidence, strengths, weaknesses
and comments. The same form validates the page, the API and the import."""

from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.utils.text import slugify

from benchmark.forms import choices_limit
from judging.models import HallucinationType
from submissions.models import Stage, Submission
from submissions.selectors import submissions_newest

from .models import HallucinationAnswer, ReviewRound

TEXT_LIMIT = 20_000
CONFIDENCE_MIN, CONFIDENCE_MAX = 1, 5
CONFIDENCE_LEVELS = {
    1: "Educated guess",
    2: "Somewhat unsure",
    3: "Fairly confident",
    4: "Confident",
    5: "Certain: I checked the details",
}


def score_field_name(dimension_key: str) -> str:
    return f"score_{dimension_key}"


# The stages whose review form also asks the four hallucination questions.
HALLUCINATION_REVIEW_STAGES = (Stage.EXPERIMENT, Stage.END2END)
HALLUCINATION_QUESTIONS = {
    HallucinationType.FAKED_EXPERIMENTAL_RESULTS: (
        "Does it report experimental results that were not actually obtained (numbers, "
        "tables or figures the code and the logs do not support)?"
    ),
    HallucinationType.HALLUCINATED_METHODOLOGY: (
        "Does it describe a method it did not actually use or implement?"
    ),
    HallucinationType.NONEXISTENT_CITATIONS: (
        "Does it cite papers, datasets or tools that do not exist, or that do not say "
        "what they are cited for?"
    ),
    HallucinationType.MATHEMATICAL_ERRORS: (
        "Does it contain wrong equations, derivations or proofs?"
    ),
}


def hallucination_field_name(kind: str) -> str:
    return f"hallucination_{kind}"


def hallucination_evidence_field_name(kind: str) -> str:
    return f"hallucination_{kind}_evidence"


def hallucination_field_names() -> set[str]:
    return {hallucination_field_name(k) for k in HALLUCINATION_QUESTIONS} | {
        hallucination_evidence_field_name(k) for k in HALLUCINATION_QUESTIONS
    }


def dimension_levels(dimension: dict) -> list[tuple[str, str]]:
    """The rubric's level descriptions, lowest score first."""
    levels = dimension.get("levels") or {}
    if isinstance(levels, list):
        return [(str(item.get("score", "")), str(item.get("text", ""))) for item in levels]

    def order(key: str):
        head = str(key).split("-")[0].strip()
        return (0, int(head)) if head.isdigit() else (1, str(key))

    return [(str(key), str(levels[key])) for key in sorted(levels, key=order)]


class ReviewForm(forms.Form):
    confidence = forms.IntegerField(
        min_value=CONFIDENCE_MIN,
        max_value=CONFIDENCE_MAX,
        widget=forms.RadioSelect(choices=[(i, str(i)) for i in range(1, 6)]),
        error_messages={
            "required": "Say how confident you are (1 to 5).",
            "invalid": "Confidence is a whole number from 1 to 5.",
            "min_value": "Confidence is a whole number from 1 to 5.",
            "max_value": "Confidence is a whole number from 1 to 5.",
        },
    )
    strengths = forms.CharField(
        max_length=TEXT_LIMIT,
        widget=forms.Textarea(attrs={"rows": 5}),
        error_messages={"required": "Name at least one strength of the paper."},
    )
    weaknesses = forms.CharField(
        max_length=TEXT_LIMIT,
        widget=forms.Textarea(attrs={"rows": 5}),
        error_messages={"required": "Name at least one weakness of the paper."},
    )
    comments = forms.CharField(
        max_length=TEXT_LIMIT, required=False, widget=forms.Textarea(attrs={"rows": 4})
    )

    def __init__(
        self,
        *args,
        dimensions: list[dict],
        hallucination: bool = False,
        frozen: Iterable[str] = (),
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.dimensions = dimensions
        self.hallucination = hallucination
        if hallucination:
            self._hallucination_fields_add()
        score_fields = {}
        for dimension in dimensions:
            low, high = int(dimension.get("min", 1)), int(dimension.get("max", 10))
            label = dimension.get("label") or dimension["key"]
            message = f"{label}: give a whole-number score from {low} to {high}."
            score_fields[score_field_name(dimension["key"])] = forms.IntegerField(
                label=label,
                min_value=low,
                max_value=high,
                widget=forms.RadioSelect(
                    choices=[(i, str(i)) for i in range(low, high + 1)],
                    attrs={"data-dimension": slugify(dimension["key"])},
                ),
                error_messages={
                    "required": message,
                    "invalid": message,
                    "min_value": message,
                    "max_value": message,
                },
            )
        # Scores first, in the rubric's order, as the reviewer reads them.
        self.fields = {**score_fields, **self.fields}
        # A submitted review's scores and answers are shown, never changed
        # (services.review_frozen_values).
        for name in frozen:
            if name in self.fields:
                self.fields[name].disabled = True

    def _hallucination_fields_add(self) -> None:
        labels = dict(HallucinationType.choices)
        for kind, question in HALLUCINATION_QUESTIONS.items():
            self.fields[hallucination_field_name(kind)] = forms.ChoiceField(
                label=f"{labels[kind]}: {question}",
                choices=HallucinationAnswer.choices,
                widget=forms.RadioSelect,
                error_messages={
                    "required": f"{labels[kind]}: answer yes, no or not sure.",
                    "invalid_choice": f"{labels[kind]}: answer yes, no or not sure.",
                },
            )
            self.fields[hallucination_evidence_field_name(kind)] = forms.CharField(
                label="Evidence (a quote, a table, a line of code)",
                max_length=TEXT_LIMIT,
                required=False,
                widget=forms.Textarea(attrs={"rows": 2}),
            )

    def hallucination_fields(self):
        """(answer field, evidence field) pairs for the template, in the questions' order."""
        if not self.hallucination:
            return []
        return [
            (self[hallucination_field_name(k)], self[hallucination_evidence_field_name(k)])
            for k in HALLUCINATION_QUESTIONS
        ]

    def cleaned_hallucination(self) -> dict[str, tuple[str, str]]:
        """`{type: (answer, evidence)}`; empty when the form does not ask."""
        if not self.hallucination:
            return {}
        return {
            kind: (
                self.cleaned_data[hallucination_field_name(kind)],
                self.cleaned_data[hallucination_evidence_field_name(kind)],
            )
            for kind in HALLUCINATION_QUESTIONS
        }

    def score_fields(self):
        """(bound field, dimension) pairs for the template."""
        return [
            (self[score_field_name(dimension["key"])], dimension, dimension_levels(dimension))
            for dimension in self.dimensions
        ]

    def cleaned_scores(self) -> dict[str, int]:
        return {
            dimension["key"]: self.cleaned_data[score_field_name(dimension["key"])]
            for dimension in self.dimensions
        }


class SubmissionCheckboxes(forms.CheckboxSelectMultiple):
    """Each paper's box says its stage (for the page to show the chosen stage's
    alone) and its label its version."""

    def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
        option = super().create_option(name, value, label, selected, index, subindex, attrs)
        submission = getattr(value, "instance", None)
        if submission is not None:
            option["attrs"]["data-stage"] = submission.stage
            option["label"] = (
                f"{submission.agent.name} / {submission.task.slug} · v{submission.version}"
            )
        return option


class ReviewRoundForm(forms.Form):
    name = forms.CharField(max_length=200)
    stage = forms.ChoiceField(choices=Stage.choices, initial=Stage.END2END)
    reviewers_per_paper = forms.IntegerField(min_value=1, max_value=20, initial=2)
    due_at = forms.DateTimeField(
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        help_text="When reviews are due.",
    )
    submissions = forms.ModelMultipleChoiceField(
        queryset=Submission.objects.none(),
        required=False,
        widget=SubmissionCheckboxes,
        help_text="Leave empty to take every submission of the stage (its newest versions).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the newest version of each run can be reviewed; the page shows
        # the chosen stage's papers alone (static/js/round_form.js).
        choices_limit(
            self,
            "submissions",
            submissions_newest(Submission.objects.all())
            .select_related("agent", "task")
            .order_by("stage", "task__slug", "agent__name"),
        )


class AssignmentAddForm(forms.Form):
    reviewer = forms.ModelChoiceField(queryset=User.objects.none())
    submission = forms.ModelChoiceField(queryset=Submission.objects.none())

    def __init__(
        self, *args: Any, review_round: ReviewRound, reviewers: QuerySet[User], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        choices_limit(self, "reviewer", reviewers)
        choices_limit(self, "submission", review_round.submissions.select_related("agent", "task"))
