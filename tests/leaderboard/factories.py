"""Agents, submissions, judges, judgments and scores for leaderboard tests.

`judge_submission` records one finished judgment with its dimension scores;
`bulk_board` fills a whole stage quickly (bulk inserts) for the tests that
need hundreds of agents.
"""

import hashlib
import itertools
from collections.abc import Iterable, Mapping
from decimal import Decimal

import factory

from benchmark.models import Agent, ModelFamily
from common.results import results_changed
from judging.models import (
    DimensionScore,
    Judge,
    JudgingCondition,
    Judgment,
    JudgmentStatus,
    Rubric,
)
from submissions.models import Stage, Submission, SubmissionSource, SubmissionStatus
from tests.benchmark import factories as base
from tests.judging import factories as judging

END2END_DIMENSIONS = ["Overall", "Clarity", "Novelty", "Soundness", "Significance"]
STAGE_DIMENSIONS = {
    Stage.IDEA: ["Overall", "Consistency", "Clarity", "Novelty", "Feasibility", "Significance"],
    Stage.PROPOSAL: ["Overall", "Consistency", "Clarity", "Novelty", "Soundness", "Feasibility"],
    Stage.EXPERIMENT: ["Overall", "Consistency", "Completeness", "Novelty", "Soundness"],
    Stage.PAPER: ["Overall", "Consistency", "Clarity", "Completeness", "Soundness"],
    Stage.END2END: END2END_DIMENSIONS,
}


class AgentFactory(base.AgentFactory):
    display_name = factory.LazyAttribute(lambda agent: agent.name.replace("-", " ").title())
    base_model = "some-model"
    scaffold = "MLR-Agent"
    model_family = ModelFamily.OTHER


class SubmissionFactory(base.SubmissionFactory):
    agent = factory.SubFactory(AgentFactory)
    status = SubmissionStatus.READY


def rubric_for(stage: str) -> Rubric:
    dimensions = STAGE_DIMENSIONS.get(stage, END2END_DIMENSIONS)
    rubric, _ = Rubric.objects.get_or_create(
        stage=stage,
        kind="score",
        version=1,
        defaults={
            "dimensions": [
                {"key": key, "label": key, "min": 1, "max": 10, "levels": {}} for key in dimensions
            ],
            "overall_key": "Overall",
            "extra_fields": ["Hallucination"] if stage == Stage.EXPERIMENT else [],
            "prompt": f"Judge the {stage}.",
        },
    )
    return rubric


class JudgeFactory(judging.JudgeFactory):
    model = factory.LazyAttribute(lambda judge: f"openai/{judge.name}")


def judge_submission(
    submission: Submission,
    judge: Judge,
    scores: Mapping[str, float],
    *,
    condition: str = JudgingCondition.WITH_CODE,
    status: str = JudgmentStatus.DONE,
    has_hallucination: bool | None = None,
    justification: str = "Because.",
    cost_usd: Decimal | None = Decimal("0.010000"),
) -> Judgment:
    """A judgment of `submission` by `judge` with one score per dimension, announced
    as `judging.services.run.judgment_run` announces a judgment that lands (its
    stage and the agreement, once the test's writes commit)."""
    judgment = Judgment.objects.create(
        submission=submission,
        judge=judge,
        rubric=rubric_for(submission.stage),
        condition=condition,
        status=status,
        has_hallucination=has_hallucination,
        strengths=["clear"],
        weaknesses=["small"],
        input_tokens=1000,
        output_tokens=200,
        cost_usd=cost_usd,
    )
    DimensionScore.objects.bulk_create(
        DimensionScore(
            judgment=judgment,
            dimension=dimension,
            score=Decimal(str(score)),
            justification=justification,
        )
        for dimension, score in scores.items()
    )
    results_changed([submission.stage], agreement=True)
    return judgment


def bulk_board(
    *,
    n_agents: int,
    tasks: Iterable,
    judges: Iterable[Judge],
    stage: str = Stage.END2END,
    prefix: str = "bulk",
    score_of=None,
) -> list[Agent]:
    """`n_agents` new agents, each with one fully judged submission per task,
    scored by every judge on every dimension of the stage (bulk inserts)."""
    tasks, judges = list(tasks), list(judges)
    rubric = rubric_for(stage)
    dimensions = STAGE_DIMENSIONS.get(stage, END2END_DIMENSIONS)
    score_of = score_of or (lambda a, t, j, d: 1 + (a * 7 + t * 3 + j * 5 + d) % 9)
    team = base.TeamFactory(slug=f"{prefix}-team", name=f"{prefix} team")
    agents = Agent.objects.bulk_create(
        Agent(team=team, name=f"{prefix}-{i}", display_name=f"{prefix.title()} {i}")
        for i in range(n_agents)
    )
    submissions = Submission.objects.bulk_create(
        Submission(
            agent=agent,
            task=task,
            stage=stage,
            source=SubmissionSource.IMPORT,
            archive_sha256=hashlib.sha256(f"{prefix}-{a}-{t}".encode()).hexdigest(),
            status=SubmissionStatus.READY,
        )
        for (a, agent), (t, task) in itertools.product(enumerate(agents), enumerate(tasks))
    )
    judgments = Judgment.objects.bulk_create(
        Judgment(
            submission=submission,
            judge=judge,
            rubric=rubric,
            status=JudgmentStatus.DONE,
            imported=True,
        )
        for submission, judge in itertools.product(submissions, judges)
    )
    n_judges = len(judges)
    n_tasks = len(tasks)
    DimensionScore.objects.bulk_create(
        DimensionScore(
            judgment=judgment,
            dimension=dimension,
            score=Decimal(
                score_of(i // n_judges // n_tasks, i // n_judges % n_tasks, i % n_judges, d)
            ),
        )
        for i, judgment in enumerate(judgments)
        for d, dimension in enumerate(dimensions)
    )
    return agents
