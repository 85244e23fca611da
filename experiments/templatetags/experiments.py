"""`{% load experiments %}{% experiment_runs submission %}`: a submission's
experiment runs, their live log tail and reproduction verdict, on the
experiments app's own pages (benchmark's pages get them as panels)."""

from django import template

from experiments.selectors import experiment_runs as runs_of

register = template.Library()


@register.inclusion_tag("experiments/_experiment_runs.html")
def experiment_runs(submission) -> dict:
    return {"runs": runs_of(submission_id=submission.pk), "submission": submission}
