"""Run by tests/judging/test_sqlite.py in a process of its own, on a SQLite database
with eager Celery (the quick start's set-up): an end-to-end submission with a
finished reproduction run is queued for two judges, which run at once, and the
outcome is printed as JSON. Arguments: the judges' api_base."""

import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mlrbench_site.settings")
django.setup()

from django.core.files.base import ContentFile  # noqa: E402
from django.utils import timezone  # noqa: E402

from common.tasks import background_wait  # noqa: E402
from experiments.claims import Number  # noqa: E402
from experiments.models import ExperimentStatus  # noqa: E402
from experiments.queue import experiment_queue  # noqa: E402
from experiments.results import reproduction_check_record  # noqa: E402
from judging.models import Judge, Judgment  # noqa: E402
from judging.selectors import submission_judging_state  # noqa: E402
from judging.services.queue import judgments_queue  # noqa: E402
from judging.services.rubrics import ensure_default_rubrics  # noqa: E402
from tests.judging.conftest import end2end_submission  # noqa: E402


def main(api_base: str) -> None:
    ensure_default_rubrics()
    judges = [
        Judge.objects.create(
            name=name,
            model="openai/sqlite-judge",
            api_base=api_base,
            api_key_env="SQLITE_JUDGE_KEY",
            timeout_seconds=10,
        )
        for name in ("judge-a", "judge-b")
    ]
    submission = end2end_submission(status="ready")
    run = experiment_queue(submission=submission, phase="repro", command="sh run.sh")
    run.log.save(f"experiments/{run.pk}.log", ContentFile(b"RERUN accuracy 0.91\n"), save=False)
    run.status = ExperimentStatus.SUCCEEDED
    run.exit_code = 0
    run.started_at = run.finished_at = timezone.now()
    run.save()
    reproduction_check_record(
        run=run, produced=[Number(value=0.91, text="0.91", where="log", decimals=2, percent=False)]
    )

    # Scores only: this run is about judging on SQLite, one answer per judge.
    judgments_queue(submissions=[submission], judges=judges, kinds=["score"])
    # No broker: the judges run after the request, in this process's background
    # threads (common.tasks.run_soon); wait for them as a page would poll.
    assert background_wait(timeout=120)

    judgments = Judgment.objects.filter(submission=submission).order_by("judge__name")
    print(
        json.dumps(
            {
                "submission": submission_judging_state(submission_id=submission.pk),
                "judgments": [
                    {
                        "status": judgment.status,
                        "error": judgment.error,
                        "attempts": judgment.attempts,
                        "strengths": judgment.strengths,
                        "cost_usd": None if judgment.cost_usd is None else str(judgment.cost_usd),
                        "started": judgment.started_at is not None,
                        "scores": {s.dimension: str(s.score) for s in judgment.scores.all()},
                    }
                    for judgment in judgments
                ],
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
