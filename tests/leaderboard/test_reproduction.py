"""The reproduction column: for experiment and end-to-end stages, the share
of an agent's tasks whose latest reproduction check found the reported
numbers (or did not), shown only where some verdict exists."""

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from experiments.models import (
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ReproductionCheck,
    ReproductionVerdict,
)
from submissions.models import Stage
from tests.benchmark.factories import AgentFactory, TaskFactory
from tests.judging.factories import JudgeFactory
from tests.leaderboard.factories import bulk_board, judge_submission
from tests.submissions.factories import SubmissionFactory
from tests.support.queries import count_queries

pytestmark = pytest.mark.django_db

LEADERBOARD = "/api/leaderboard/"
EXPERIMENT_SCORES = {
    "Overall": 6,
    "Consistency": 5,
    "Completeness": 5,
    "Novelty": 5,
    "Soundness": 5,
}


def repro_run(submission) -> ExperimentRun:
    now = timezone.now()
    return ExperimentRun(
        submission=submission,
        phase=ExperimentPhase.REPRO,
        command="sh run.sh",
        status=ExperimentStatus.SUCCEEDED,
        exit_code=0,
        time_limit_seconds=60,
        started_at=now - timedelta(seconds=5),
        finished_at=now,
    )


def check(submission, verdict: str) -> ReproductionCheck:
    run = repro_run(submission)
    run.save()
    return ReproductionCheck.objects.create(
        run=run, verdict=verdict, summary=f"{verdict} for the test", tolerance=0.01
    )


def row_of(answer: dict, agent: str) -> dict:
    return next(r for r in answer["rows"] if r["agent"] == agent)


def test_the_column_gives_the_share_of_checked_tasks_reproduced_and_not(
    client, django_capture_on_commit_callbacks
):
    judge = JudgeFactory(name="judge-a")
    alpha, beta = AgentFactory(name="alpha"), AgentFactory(name="beta")
    tasks = [TaskFactory(slug=f"iclr2025_r{i}") for i in range(5)]
    with django_capture_on_commit_callbacks(execute=True):
        submissions = []
        for task in tasks:
            submission = SubmissionFactory(agent=alpha, task=task, stage=Stage.EXPERIMENT)
            judge_submission(submission, judge, EXPERIMENT_SCORES)
            submissions.append(submission)
        judge_submission(
            SubmissionFactory(agent=beta, task=tasks[0], stage=Stage.EXPERIMENT),
            judge,
            EXPERIMENT_SCORES,
        )
        # The latest check of a submission is its verdict: this one was re-checked.
        check(submissions[0], ReproductionVerdict.NOT_REPRODUCED)
        check(submissions[0], ReproductionVerdict.REPRODUCED)
        check(submissions[1], ReproductionVerdict.REPRODUCED)
        check(submissions[2], ReproductionVerdict.NOT_REPRODUCED)
        check(submissions[3], ReproductionVerdict.COULD_NOT_RUN)
        # tasks[4] has no check: it is not in the share.
        # An older version does not count once a newer one is judged.
        older = SubmissionFactory(agent=beta, task=tasks[1], stage=Stage.EXPERIMENT, version=1)
        judge_submission(older, judge, EXPERIMENT_SCORES)
        check(older, ReproductionVerdict.REPRODUCED)
        newer = SubmissionFactory(agent=beta, task=tasks[1], stage=Stage.EXPERIMENT, version=2)
        judge_submission(newer, judge, EXPERIMENT_SCORES)

    answer = client.get(LEADERBOARD, {"stage": "experiment"}).json()

    assert answer["has_reproduction"] is True
    alpha_row = row_of(answer, "alpha")
    assert alpha_row["reproduction_checked"] == 4
    assert alpha_row["reproduced_rate"] == 0.5
    assert alpha_row["not_reproduced_rate"] == 0.25
    beta_row = row_of(answer, "beta")
    assert (beta_row["reproduced_rate"], beta_row["reproduction_checked"]) == (None, 0)

    page = client.get(reverse("leaderboard:leaderboard"), {"stage": "experiment"})
    html = page.content.decode()
    assert ">Reproduced</a>" in html
    assert '<td class="num" data-column="reproduced">50%<br>' in html
    assert "25% not · 4 checked" in html

    rows = list(
        csv.DictReader(
            io.StringIO(client.get(LEADERBOARD, {"stage": "experiment", "format": "csv"}).text)
        )
    )
    alpha_csv = next(r for r in rows if r["agent"] == "alpha")
    assert (alpha_csv["reproduced_rate"], alpha_csv["not_reproduced_rate"]) == ("0.5", "0.25")

    # Sorting by the column puts agents without a verdict last.
    ordered = client.get(LEADERBOARD, {"stage": "experiment", "sort": "-reproduced"}).json()
    assert [r["agent"] for r in ordered["rows"]] == ["alpha", "beta"]


def test_the_column_is_hidden_where_no_verdict_exists(client):
    judge = JudgeFactory(name="judge-a")
    submission = SubmissionFactory(agent=AgentFactory(name="alpha"), stage=Stage.END2END)
    judge_submission(submission, judge, {"Overall": 6, "Clarity": 5})
    # A verdict on the experiment stage does not show on the end-to-end board.
    experiment = SubmissionFactory(agent=AgentFactory(name="beta"), stage=Stage.EXPERIMENT)
    judge_submission(experiment, judge, EXPERIMENT_SCORES)
    check(experiment, ReproductionVerdict.REPRODUCED)

    answer = client.get(LEADERBOARD).json()
    assert answer["has_reproduction"] is False
    assert row_of(answer, "alpha")["reproduced_rate"] is None
    assert ">Reproduced</a>" not in client.get(reverse("leaderboard:leaderboard")).content.decode()
    assert client.get(LEADERBOARD, {"stage": "experiment"}).json()["has_reproduction"] is True


@pytest.mark.parametrize("stage", [Stage.EXPERIMENT, Stage.END2END])
def test_the_reproduction_column_keeps_the_query_count_constant(client, stage):
    judges = [JudgeFactory(name="judge-a"), JudgeFactory(name="judge-b")]
    tasks = [TaskFactory(slug=f"iclr2025_t{i}") for i in range(3)]
    page = reverse("leaderboard:leaderboard")
    params = {"stage": stage}
    verdicts = list(ReproductionVerdict.values)

    def add_checks(agents):
        runs = ExperimentRun.objects.bulk_create(
            repro_run(submission) for agent in agents for submission in agent.submissions.all()
        )
        ReproductionCheck.objects.bulk_create(
            ReproductionCheck(run=run, verdict=verdicts[i % 3], summary="-", tolerance=0.01)
            for i, run in enumerate(runs)
        )

    add_checks(bulk_board(n_agents=3, tasks=tasks, judges=judges, stage=stage, prefix="small"))
    small = (count_queries(client, page, params), count_queries(client, LEADERBOARD, params))

    large = bulk_board(n_agents=100, tasks=tasks, judges=judges, stage=stage, prefix="large")
    add_checks(large[:50])
    big = (count_queries(client, page, params), count_queries(client, LEADERBOARD, params))

    rows = client.get(LEADERBOARD, params).json()["rows"]
    assert len(rows) == 103
    assert sum(r["reproduction_checked"] == 3 for r in rows) == 53
    assert small == big
