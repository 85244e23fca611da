"""`{% load experiments %}{% experiment_runs submission %}`: a submission's
experiment runs, their live log tail and reproduction verdict, for any page."""

from django import template

from benchmark.experiments.selectors import experiment_runs as runs_of

register = template.Library()


@register.inclusion_tag("benchmark/_experiment_runs.html")
def experiment_runs(submission) -> dict:
    return {"runs": runs_of(submission_id=submission.pk), "submission": submission}


@register.inclusion_tag("benchmark/_objective_results.html")
def objective_results(task) -> dict:
    from benchmark.experiments.selectors import objective_task_results

    objective, results = objective_task_results(task_id=task.pk)
    return {"objective": objective, "results": results}
