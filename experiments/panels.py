"""The experiments' panels on benchmark's pages (see benchmark/page_panels.py):
a submission's runs with their live log and reproduction verdict, and an
objective task's results."""

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from benchmark.models import Task, TaskKind
from submissions.models import Stage, Submission

from .environments import environment_state
from .selectors import experiment_runs, objective_task_results

# The stages whose submissions carry code to run; the others show runs only if
# an organiser started one anyway.
_RUN_STAGES = frozenset({Stage.EXPERIMENT, Stage.END2END, Stage.METHOD})


def experiment_runs_panel(*, request: HttpRequest, submission: Submission) -> SafeString:
    runs = experiment_runs(submission_id=submission.pk)
    if not runs and submission.stage not in _RUN_STAGES:
        return SafeString("")
    html = render_to_string(
        "experiments/_experiment_runs.html",
        {"runs": runs, "submission": submission},
        request=request,
    )
    return mark_safe(html)  # noqa: S308 - a template rendered with autoescaping


def objective_results_panel(*, request: HttpRequest, task: Task) -> SafeString:
    if task.kind != TaskKind.OBJECTIVE:
        return SafeString("")
    objective, results = objective_task_results(task_id=task.pk)
    html = render_to_string(
        "experiments/_objective_results.html",
        {
            "objective": objective,
            "results": results,
            "environment": environment_state(
                list(objective.environment_requirements or []), objective.environment_python
            )
            if objective is not None
            else None,
        },
        request=request,
    )
    return mark_safe(html)  # noqa: S308 - a template rendered with autoescaping
