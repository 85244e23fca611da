"""A submission's state as its pages, the API and the admin show it.

`Submission.status` is the intake's own (received, ready, failed). What happens
to a ready submission afterwards (being judged, judged) belongs to the judging
app, which derives it from the judgments and registers that derivation here in
its `AppConfig.ready()`, so that `benchmark` never imports it. Without a
registration (benchmark alone) the state is the intake status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db.models import Expression, F, QuerySet

from .models import Submission, SubmissionStatus

STATE = "state"  # the annotation's name on Submission querysets


@dataclass(frozen=True)
class _Derivation:
    # A fresh expression over Submission rows giving the state's value; it must give
    # the intake status itself for a submission that is not ready.
    expression: Callable[[], Expression | F]
    # The values it adds past intake, with their labels.
    choices: Sequence[tuple[str, str]]


_derivation: _Derivation | None = None


def submission_state_register(
    *, expression: Callable[[], Expression | F], choices: Sequence[tuple[str, str]]
) -> None:
    """Called once, by the app that knows what follows intake (judging)."""
    global _derivation
    _derivation = _Derivation(expression=expression, choices=tuple(choices))


def submission_state_expression() -> Expression | F:
    return _derivation.expression() if _derivation else F("status")


def submission_state_choices() -> list[tuple[str, str]]:
    extra = list(_derivation.choices) if _derivation else []
    return [*SubmissionStatus.choices, *extra]


def submissions_with_state(submissions: QuerySet[Submission]) -> QuerySet[Submission]:
    """`submissions`, each with its state as `.state` (filterable: `state="judged"`)."""
    return submissions.annotate(**{STATE: submission_state_expression()})


def submission_state(submission: Submission) -> str:
    """The state of one submission: its `.state` when it came annotated, else one query."""
    state = getattr(submission, STATE, None)
    if state is None:
        state = (
            submissions_with_state(Submission.objects.filter(pk=submission.pk))
            .values_list(STATE, flat=True)
            .first()
        )
    return state or submission.status


def submission_state_label(state: str) -> str:
    return dict(submission_state_choices()).get(state, state)
