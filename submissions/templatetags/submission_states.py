from django import template

from submissions.models import Submission
from submissions.states import submission_state, submission_state_label

register = template.Library()


@register.filter
def state_label(submission: Submission) -> str:
    """The submission's state as people read it: "Ready", "Judging", "Judged", ..."""
    return submission_state_label(submission_state(submission))
