"""Queue experiment runs when a submission's intake has finished.

A method submission for an objective task gets a dev run; an experiment or
end-to-end submission that says how to run it (run.sh, or a command given
with the upload) gets a reproduction run. Imported runs are not re-run
automatically (an organiser queues them with `run_experiment`), and without
a broker nothing is queued here: an eager run would hold the upload's
request for as long as the experiment takes.
"""

import logging

from django.conf import settings
from django.dispatch import receiver

from experiments.models import ExperimentPhase
from submissions.models import Stage, Submission, SubmissionSource
from submissions.signals import submission_ready

from .errors import ExperimentRefused
from .queue import REPRO_STAGES, experiment_queue, experiment_refusal_record, repro_command_find

logger = logging.getLogger(__name__)


def _phase_for(submission: Submission) -> str | None:
    if submission.stage == Stage.METHOD and hasattr(submission.task, "objective"):
        return ExperimentPhase.DEV
    if submission.stage in REPRO_STAGES and repro_command_find(submission):
        return ExperimentPhase.REPRO
    return None


@receiver(submission_ready, dispatch_uid="experiments-queue-on-submission-ready")
def experiment_queue_on_ready(sender, submission_id: int, **kwargs) -> None:
    if not settings.EXPERIMENT_AUTO_QUEUE or settings.CELERY_TASK_ALWAYS_EAGER:
        return
    submission = Submission.objects.select_related("task").filter(pk=submission_id).first()
    if submission is None or submission.source == SubmissionSource.IMPORT:
        return
    phase = _phase_for(submission)
    if phase is None or submission.experiment_runs.filter(phase=phase).exists():
        return
    try:
        experiment_queue(submission=submission, phase=phase)
    except ExperimentRefused as exc:
        # Nobody is waiting on a command line here: the refusal is kept as a
        # failed run, so the submission page and the API say why.
        experiment_refusal_record(submission=submission, phase=phase, reason=f"not queued: {exc}")
        logger.info("submission %s: %s run not queued: %s", submission.pk, phase, exc)
