"""A paper under review with every role around it, for the permission and
blindness tests: its agent's team includes a submitter; reviewer A is
assigned and has not submitted, reviewers B and D are assigned and have
submitted, reviewer C is a reviewer without this paper; an organiser."""

from dataclasses import dataclass

from django.contrib.auth.models import User

from benchmark.roles import organiser_grant
from judging.models import Rubric
from reviews.models import Assignment, ReviewRound
from reviews.services import (
    assignment_add,
    review_round_create,
    review_submit,
    reviewer_register,
)
from submissions.models import ArtifactKind, Stage, Submission
from tests.benchmark.factories import AgentFactory, TeamFactory, UserFactory
from tests.judging.factories import JudgeFactory, RubricFactory
from tests.reviews.factories import judgment_record
from tests.submissions.factories import SubmissionFactory, artifact_add

# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4a20000000049454e44ae426082"
)

AGENT_NAME = "zephyr-secret"
AGENT_DISPLAY = "Zephyr Hidden Agent"
AGENT_MODEL = "omegamodel-42"
TEAM_NAME = "Kappa Lab"
TEAM_SLUG = "kappa-lab"
IDENTITY = [AGENT_NAME, AGENT_DISPLAY, AGENT_MODEL, TEAM_NAME, TEAM_SLUG, "zephyr"]


def review_data(scores: dict[str, int] | None = None, **overrides) -> dict:
    scores = scores or {"Clarity": 6, "Novelty": 7, "Soundness": 4, "Significance": 5, "Overall": 5}
    data = {f"score_{k}": str(v) for k, v in scores.items()}
    data.update(confidence="4", strengths="Clear writing.", weaknesses="Weak baselines.")
    data.update(comments="")
    # Experiment and end-to-end rounds ask the four hallucination questions too
    # (ignored by the other stages' form).
    data.update(
        {
            f"hallucination_{kind}": "no"
            for kind in (
                "faked_experimental_results",
                "hallucinated_methodology",
                "nonexistent_citations",
                "mathematical_errors",
            )
        }
    )
    data.update(overrides)
    return data


@dataclass
class Scenario:
    submission: Submission
    rubric: Rubric
    submitter: User
    reviewer_a: User
    reviewer_b: User
    reviewer_c: User
    reviewer_d: User
    organiser: User
    assignment_a: Assignment
    assignment_b: Assignment
    review_round: ReviewRound


def scenario_build() -> Scenario:
    rubric = RubricFactory()
    submitter = UserFactory(username="submitter")
    team = TeamFactory(name=TEAM_NAME, slug=TEAM_SLUG, members=[submitter])
    agent = AgentFactory(
        name=AGENT_NAME, display_name=AGENT_DISPLAY, base_model=AGENT_MODEL, team=team
    )
    submission = SubmissionFactory(agent=agent, stage=Stage.END2END)
    artifact_add(
        submission,
        "results/paper.md",
        ArtifactKind.PAPER,
        b"# Adaptive alignment\n\nWe study drift.\n\n![Loss curve](./figures/loss.png)\n",
    )
    artifact_add(submission, "results/figures/loss.png", ArtifactKind.FIGURE, PNG)
    artifact_add(submission, f"{AGENT_NAME}_code/main.py", ArtifactKind.CODE, b"print('train')\n")
    artifact_add(
        submission,
        "results/log.txt",
        ArtifactKind.LOG,
        b"\n".join(f"epoch {i} loss {1 / (i + 1):.3f}".encode() for i in range(300)),
    )
    for name, overall in (("judge-a", 8), ("judge-b", 7)):
        judgment_record(
            submission,
            JudgeFactory(name=name),
            rubric,
            {"Clarity": 7, "Novelty": 6, "Soundness": 5, "Significance": 6, "Overall": overall},
        )
    organiser = UserFactory(username="organiser")
    organiser_grant(user=organiser)
    reviewers = {}
    for letter in "abcd":
        user = UserFactory(username=f"reviewer-{letter}")
        reviewer_register(user=user)
        reviewers[letter] = user
    review_round = review_round_create(
        name="Spring round",
        stage=Stage.END2END,
        due_at=submission.created_at.replace(year=submission.created_at.year + 1),
        submissions=[submission],
        reviewers_per_paper=3,
        created_by=organiser,
    )
    assignments = {
        letter: assignment_add(
            review_round=review_round, reviewer=reviewers[letter], submission=submission
        )
        for letter in "abd"
    }
    review_submit(assignment=assignments["b"], data=review_data())
    review_submit(
        assignment=assignments["d"],
        data=review_data(
            {"Clarity": 3, "Novelty": 3, "Soundness": 3, "Significance": 3, "Overall": 3}
        ),
    )
    return Scenario(
        submission=submission,
        rubric=rubric,
        submitter=submitter,
        reviewer_a=reviewers["a"],
        reviewer_b=reviewers["b"],
        reviewer_c=reviewers["c"],
        reviewer_d=reviewers["d"],
        organiser=organiser,
        assignment_a=assignments["a"],
        assignment_b=assignments["b"],
        review_round=review_round,
    )
