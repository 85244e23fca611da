"""Which submission counts on a board: the leaderboard stages, the newest fully
judged version of each agent's task (the definitions are in `board`), under a
panel or every judge, and the versions a panel leaves out."""

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, Max, Q, QuerySet

from judging.models import (
    JudgingCondition,
    Judgment,
    JudgmentStatus,
    SubmissionJudgingState,
)
from judging.selectors import (
    PanelChoice,
    not_counted_reasons,
    panel_scored,
    stage_panel,
    submission_judging_state_expression,
)
from reviews.blind import under_open_review
from submissions.costs import coding_cost_unknown
from submissions.models import Stage, Submission

LEADERBOARD_STAGES: tuple[str, ...] = (
    Stage.IDEA,
    Stage.PROPOSAL,
    Stage.EXPERIMENT,
    Stage.PAPER,
    Stage.END2END,
)


@dataclass(frozen=True)
class NotCounted:
    """A submission the board leaves out because a panel judge failed on it or
    has not finished: the newest version of an agent's task, and why."""

    submission_id: int
    agent: str
    task: str
    version: int
    reason: str


def stage_submissions(
    *,
    stage: str | None,
    conference: str = "",
    year: int | None = None,
    topic: str = "",
    task: str = "",
    agent: str = "",
) -> QuerySet[Submission]:
    """Every version of every submission of `stage` (None: every leaderboard
    stage) on the tasks the filters choose; never a system agent's (a canary),
    and never the runs of a task with a paper in an open blind review round
    (`reviews.blind.under_open_review`): the boards, the compare view, the
    fabrication page and new releases leave them out until the round closes."""
    submissions = Submission.objects.public().exclude(under_open_review())
    if stage is None:
        submissions = submissions.filter(stage__in=LEADERBOARD_STAGES)
    else:
        submissions = submissions.filter(stage=stage)
    if conference:
        submissions = submissions.filter(task__conference=conference)
    if year:
        submissions = submissions.filter(task__year=year)
    if topic:
        submissions = submissions.filter(task__topic=topic)
    if task:
        submissions = submissions.filter(task__slug=task)
    if agent:
        submissions = submissions.filter(agent__name=agent)
    return submissions.order_by()


@dataclass(frozen=True)
class SubmissionFacts:
    id: int
    agent_id: int
    task_id: int
    stage: str
    version: int
    status: str
    cost_usd: float | None
    # Steps of the run without a price (LLM steps, and a coding agent whose cost
    # nobody recorded): the cost is then a lower bound.
    unpriced_steps: int = 0


def _task_cost(llm: Decimal | None, agent: Decimal | None) -> float | None:
    known = [float(value) for value in (llm, agent) if value is not None]
    return sum(known) if known else None


def counted_submissions(
    submissions: QuerySet[Submission],
    *,
    condition: str = JudgingCondition.WITH_CODE,
    panel: PanelChoice | None = None,
) -> dict[int, SubmissionFacts]:
    """Of `submissions`, the one that counts for each (agent, task, stage): the
    newest fully judged version (see `board`'s docstring); with a `panel`, the
    newest that each of its judges has a finished scoring judgment of (no other
    judge, nor a judgment at work or failed, changes that). Two queries,
    whatever the number of submissions."""
    if panel is not None:
        return _counted_by_panel(submissions, condition=condition, panel=panel)
    facts = _submission_facts(submissions, judging_state=True)
    judgment_counts = {
        sid: (done, pending)
        for sid, done, pending in Judgment.objects.filter(
            submission_id__in=submissions.values("id"), condition=condition
        )
        .values("submission_id")
        .annotate(
            done=Count("id", filter=Q(status=JudgmentStatus.DONE)),
            pending=Count("id", filter=~Q(status=JudgmentStatus.DONE)),
        )
        .values_list("submission_id", "done", "pending")
        .order_by()
    }

    def fully_judged(fact: SubmissionFacts) -> bool:
        done, pending = judgment_counts.get(fact.id, (0, 0))
        return done > 0 and (fact.status == SubmissionJudgingState.JUDGED or pending == 0)

    return _newest_of_each(fact for fact in facts if fully_judged(fact))


def _submission_facts(
    submissions: QuerySet[Submission], *, judging_state: bool = False
) -> list[SubmissionFacts]:
    """What the boards read of each submission; its judging state where asked
    (counting without a panel reads it), else ""."""
    fields = [
        "id",
        "agent_id",
        "task_id",
        "stage",
        "version",
        "llm_cost_usd",
        "agent_cost_usd",
        "llm_unpriced_steps",
        "agent__coding_agent",
    ]
    if judging_state:
        submissions = submissions.annotate(judging_state=submission_judging_state_expression())
        fields.append("judging_state")
    # A coding agent that recorded no cost is one more unpriced step (a lower bound).
    return [
        SubmissionFacts(
            sid,
            agent_id,
            task_id,
            stage,
            version,
            state[0] if state else "",
            _task_cost(llm, coding),
            unpriced + coding_cost_unknown(stage=stage, coding_agent=coder, agent_cost_usd=coding),
        )
        for sid, agent_id, task_id, stage, version, llm, coding, unpriced, coder, *state in (
            submissions.values_list(*fields)
        )
    ]


def _newest_of_each(facts: Iterable[SubmissionFacts]) -> dict[int, SubmissionFacts]:
    """The newest version of each agent's task and stage among `facts`, by id."""
    newest: dict[tuple[int, int, str], SubmissionFacts] = {}
    for fact in facts:
        key = (fact.agent_id, fact.task_id, fact.stage)
        if key not in newest or newest[key].version < fact.version:
            newest[key] = fact
    return {fact.id: fact for fact in newest.values()}


def _counted_by_panel(
    submissions: QuerySet[Submission], *, condition: str, panel: PanelChoice
) -> dict[int, SubmissionFacts]:
    complete = set(
        panel_scored(panel, condition=condition, submissions=submissions)
        .values_list("submission_id", flat=True)
        .order_by()
    )
    return _newest_of_each(
        _submission_facts(submissions.filter(id__in=complete) if complete else submissions.none())
    )


def _not_counted(
    candidates: QuerySet[Submission],
    counted: dict[int, SubmissionFacts],
    *,
    condition: str,
    panel: PanelChoice,
) -> list[NotCounted]:
    """The newest version of each (agent, task) that the panel does not count,
    where a panel judge failed on it or is still at work, with the reason."""
    reasons = not_counted_reasons(
        submission_ids=candidates.values("id"), panel=panel, condition=condition
    )
    if not reasons:
        return []
    rows = candidates.filter(id__in=list(reasons)).values_list(
        "id", "agent_id", "task_id", "version", "agent__name", "task__slug"
    )
    newest_version = {
        (agent_id, task_id): version
        for agent_id, task_id, version in candidates.values_list("agent_id", "task_id")
        .annotate(newest=Max("version"))
        .values_list("agent_id", "task_id", "newest")
        .order_by()
    }
    return sorted(
        (
            NotCounted(sid, agent, task, version, reasons[sid])
            for sid, agent_id, task_id, version, agent, task in rows
            if sid not in counted and newest_version.get((agent_id, task_id)) == version
        ),
        key=lambda row: (row.agent, row.task),
    )


def counted_by_stage(submissions: QuerySet[Submission]) -> dict[int, SubmissionFacts]:
    """`counted_submissions` of each leaderboard stage under its default panel."""
    counted: dict[int, SubmissionFacts] = {}
    for stage in LEADERBOARD_STAGES:
        counted |= counted_submissions(
            submissions.filter(stage=stage), panel=stage_panel(stage=stage)
        )
    return counted
