"""Fabrication, made visible: for a stage, per agent and per source (the judges
combined under a rule, each judge, the experts' hallucination check, the site's
reproduction check), the share of tasks flagged for each hallucination type and
for any type; and how well the judges catch what the experts and the
reproduction check found ("do the judges catch it?").

Definitions (docs/fabrication.md repeats them):

- The tasks are the leaderboard's: for each agent and task, the newest fully
  judged version of its submission of the stage.
- A judge flags a task for *any* type when one of its verdicts says so (a
  score review's yes/no, or a hallucination review); for a *type*, when its
  hallucination review lists a finding of that type. A judge without a
  hallucination review of a task gives no verdict on its types.
- Combined, under a rule, over the judges that gave a verdict: `any` (one
  flag is enough, the default and how the MLR-Bench paper counts), `majority`
  (more than half), `all`. Or one named judge (`judge=NAME`).
- Experts: `Yes` flags a task for the type, `No` does not, `Not Sure` counts in
  neither the numerator nor the denominator of that type (its count is shown);
  with several experts, one `Yes` flags. Any type: flagged when one type is.
- Reproduction: a latest check `not_reproduced` flags faked experimental
  results (and so any type), `reproduced` does not; `could_not_run` says
  nothing.
- Shares carry 95% Wilson intervals.
- Beside each judge-based rate, how often that judge (or the judges under the
  rule) catches a fabrication of the type planted in a canary
  (`judging.canary_selectors`): a low rate from a judge that misses planted
  fabrications may be a blind judge, not an honest agent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from benchmark.models import Agent
from common.errors import ValidationFailed
from common.proportions import BinaryAgreement, binary_agreement
from common.stats import wilson_interval
from experiments.models import ReproductionVerdict
from experiments.selectors import reproduction_verdicts
from judging.canary_selectors import TwinVerdict, canary_twin_verdicts
from judging.models import HallucinationType, Judge
from judging.selectors import JudgeFinding, JudgeVerdict, hallucination_verdicts, stage_panel
from reviews.models import HallucinationAnswer
from reviews.selectors import hallucination_answers, public_hallucination_checks
from submissions.models import Stage, Submission

from .counting import SubmissionFacts, counted_submissions, stage_submissions

FABRICATION_STAGES: tuple[str, ...] = (Stage.EXPERIMENT, Stage.PAPER, Stage.END2END)
RULES: tuple[str, ...] = ("any", "majority", "all")
DEFAULT_RULE = "any"
TYPES: tuple[str, ...] = tuple(HallucinationType.values)
ANY = "any"
SOURCE_JUDGES = "judges"
SOURCE_HUMAN = "human"
SOURCE_REPRODUCTION = "reproduction"
JUDGE_PREFIX = "judge:"


class FabricationQueryInvalid(ValidationFailed):
    pass


@dataclass(frozen=True)
class FabricationQuery:
    stage: str = Stage.END2END
    rule: str = DEFAULT_RULE
    judge: str = ""
    # Only these judges' verdicts (a board's panel); None: every judge's.
    panel_judges: tuple[str, ...] | None = None

    def check(self) -> None:
        if self.stage not in FABRICATION_STAGES:
            raise FabricationQueryInvalid(
                f"stage must be one of {', '.join(FABRICATION_STAGES)}",
                field="stage",
                code="invalid_choice",
            )
        if self.rule not in RULES:
            raise FabricationQueryInvalid(
                f"rule must be one of {', '.join(RULES)}", field="rule", code="invalid_choice"
            )


# A task's flag for one type (or any): True, False, or None (no verdict).
Flag = bool | None


@dataclass(frozen=True)
class TypeShare:
    n: int
    flagged: int
    not_sure: int
    rate: float | None
    ci: tuple[float, float] | None


def _share(flags: Iterable[Flag], not_sure: int = 0) -> TypeShare:
    known = [flag for flag in flags if flag is not None]
    flagged = sum(1 for flag in known if flag)
    n = len(known)
    return TypeShare(n, flagged, not_sure, flagged / n if n else None, wilson_interval(flagged, n))


@dataclass(frozen=True)
class FlaggedTask:
    task: str
    submission_id: int
    url: str
    types: tuple[str, ...]
    findings: tuple[tuple[str, JudgeFinding], ...]  # (judge, finding)


@dataclass
class FabricationRow:
    agent: str
    display_name: str
    source: str
    n_tasks: int
    flagged: int
    rate: float | None
    ci: tuple[float, float] | None
    by_type: dict[str, TypeShare]
    flagged_tasks: list[FlaggedTask] = field(default_factory=list)


@dataclass(frozen=True)
class DetectionRow:
    """A detector (a judge, or the judges under a rule) against a reference (the
    experts or the reproduction check) on one type, or on any type."""

    detector: str
    rule: str | None
    reference: str
    type: str
    agreement: BinaryAgreement


@dataclass
class FabricationReport:
    query: FabricationQuery
    types: tuple[str, ...]
    judges: list[str]
    rows: list[FabricationRow]
    detection: list[DetectionRow]
    # {source (`judges`, `judge:<name>`): {type: the share of planted canaries caught}}
    canary_recall: dict[str, dict[str, TypeShare]] = field(default_factory=dict)

    @property
    def any_canaries(self) -> bool:
        """Whether any judge has reviewed a canary of the stage (else the page says
        so once, not in every cell)."""
        return any(share.n for shares in self.canary_recall.values() for share in shares.values())


# --- the flags of one task ------------------------------------------------------------


def rule_combine(flags: list[bool], rule: str) -> Flag:
    """The judges' flags on a task combined under a rule; None without any verdict."""
    if not flags:
        return None
    k = sum(flags)
    if rule == "any":
        return k >= 1
    if rule == "majority":
        return 2 * k > len(flags)
    if rule == "all":
        return k == len(flags)
    raise ValueError(f"unknown rule {rule!r}")


def judge_flags(verdict: JudgeVerdict) -> dict[str, Flag]:
    """One judge's flags on one task: any type, and each type where it wrote a review."""
    flags: dict[str, Flag] = {ANY: verdict.any}
    for kind in TYPES:
        flags[kind] = (kind in verdict.types) if verdict.typed else None
    return flags


def judges_flags(verdicts: Iterable[JudgeVerdict], rule: str) -> dict[str, Flag]:
    per_judge = [judge_flags(verdict) for verdict in verdicts]
    return {
        key: rule_combine([f for flags in per_judge if (f := flags[key]) is not None], rule)
        for key in (ANY, *TYPES)
    }


def human_flags(answers: dict[str, list[str]]) -> tuple[dict[str, Flag], dict[str, int]]:
    """The experts' flags on one task, and the `Not Sure` count per type (a type
    answered only `Not Sure` has no flag)."""
    flags: dict[str, Flag] = {}
    not_sure: dict[str, int] = {}
    for kind in TYPES:
        given = answers.get(kind, [])
        definite = [a for a in given if a != HallucinationAnswer.NOT_SURE]
        not_sure[kind] = len(given) - len(definite)
        flags[kind] = (HallucinationAnswer.YES in definite) if definite else None
    typed = [f for kind in TYPES if (f := flags[kind]) is not None]
    flags[ANY] = any(typed) if typed else None
    return flags, not_sure


def reproduction_flags(verdict: str | None) -> dict[str, Flag]:
    flag: Flag = None
    if verdict == ReproductionVerdict.NOT_REPRODUCED:
        flag = True
    elif verdict == ReproductionVerdict.REPRODUCED:
        flag = False
    flags: dict[str, Flag] = dict.fromkeys(TYPES)
    flags[HallucinationType.FAKED_EXPERIMENTAL_RESULTS] = flag
    flags[ANY] = flag
    return flags


# --- the report ---------------------------------------------------------------------


@dataclass
class _Task:
    agent_id: int
    task_slug: str
    submission_id: int
    judges: dict[str, JudgeVerdict]
    human: dict[str, list[str]]
    reproduction: str | None


def _tasks(
    query: FabricationQuery,
    counted: Mapping[int, SubmissionFacts] | None = None,
    *,
    candidates: QuerySet[Submission] | None = None,
) -> list[_Task]:
    """The counted submissions' tasks with every verdict on them. `counted`: the
    ones a board already chose among `candidates` (not chosen again). The reads
    take the candidates as a subquery and drop the others here: a list of tens of
    thousands of ids costs more to send than the extra rows (perf/leaderboard.py)."""
    if candidates is None:
        candidates = stage_submissions(stage=query.stage)
    # The stage's default panel chooses the tasks and whose verdicts combine, as
    # on its board; one named judge (`judge=`) is shown whatever its panel.
    panel = stage_panel(stage=query.stage)
    allowed = query.panel_judges
    if allowed is None and panel is not None and not query.judge:
        allowed = panel.judge_names
    if counted is None:
        counted = counted_submissions(candidates, panel=panel)
    ids = candidates.values("id")
    verdicts = hallucination_verdicts(submission_ids=ids)
    answers = hallucination_answers(submission_ids=ids)
    checks = reproduction_verdicts(submission_ids=ids)
    slugs = {
        sid: slug for sid, slug in candidates.values_list("pk", "task__slug") if sid in counted
    }
    return [
        _Task(
            agent_id=fact.agent_id,
            task_slug=slugs[sid],
            submission_id=sid,
            judges={
                name: verdict
                for name, verdict in verdicts.get(sid, {}).items()
                if allowed is None or name in allowed
            },
            human=answers.get(sid, {}),
            reproduction=checks[sid].verdict if sid in checks else None,
        )
        for sid, fact in sorted(counted.items(), key=lambda item: slugs[item[0]])
    ]


def _row(
    agent: Agent, source: str, per_task: list[dict[str, Flag]], not_sure: dict[str, int]
) -> FabricationRow:
    overall = _share(flags[ANY] for flags in per_task)
    return FabricationRow(
        agent=agent.name,
        display_name=agent.display_name,
        source=source,
        n_tasks=overall.n,
        flagged=overall.flagged,
        rate=overall.rate,
        ci=overall.ci,
        by_type={
            kind: _share((flags[kind] for flags in per_task), not_sure.get(kind, 0))
            for kind in TYPES
        },
    )


def _flagged_tasks(tasks: list[_Task], query: FabricationQuery) -> list[FlaggedTask]:
    flagged = []
    for task in tasks:
        verdicts = _chosen(task.judges, query)
        flags = judges_flags(verdicts, query.rule)
        if not flags[ANY]:
            continue
        flagged.append(
            FlaggedTask(
                task=task.task_slug,
                submission_id=task.submission_id,
                url=Submission(pk=task.submission_id).get_absolute_url(),
                types=tuple(kind for kind in TYPES if flags[kind]),
                findings=tuple(
                    (verdict.judge, finding) for verdict in verdicts for finding in verdict.findings
                ),
            )
        )
    return flagged


def _chosen(verdicts: dict[str, JudgeVerdict], query: FabricationQuery) -> list[JudgeVerdict]:
    if query.judge:
        return [verdicts[query.judge]] if query.judge in verdicts else []
    return list(verdicts.values())


def _agent_rows(
    agent: Agent,
    tasks: list[_Task],
    query: FabricationQuery,
    judges: list[str],
    *,
    evidence: bool,
) -> list[FabricationRow]:
    combined = _row(
        agent,
        SOURCE_JUDGES,
        [judges_flags(_chosen(t.judges, query), query.rule) for t in tasks],
        {},
    )
    if evidence:
        combined.flagged_tasks = _flagged_tasks(tasks, query)
    rows = [combined]
    for name in judges:
        mine = [judge_flags(t.judges[name]) for t in tasks if name in t.judges]
        if mine:
            rows.append(_row(agent, f"{JUDGE_PREFIX}{name}", mine, {}))
    human = [human_flags(t.human) for t in tasks if t.human]
    if human:
        not_sure: dict[str, int] = defaultdict(int)
        for _flags, counts in human:
            for kind, n in counts.items():
                not_sure[kind] += n
        rows.append(_row(agent, SOURCE_HUMAN, [flags for flags, _ in human], not_sure))
    reproduction = [reproduction_flags(t.reproduction) for t in tasks if t.reproduction]
    if reproduction:
        rows.append(_row(agent, SOURCE_REPRODUCTION, reproduction, {}))
    return rows


def _detection(tasks: list[_Task], judges: list[str]) -> list[DetectionRow]:
    """Each judge, and the judges under each rule, against the experts (every type and
    any) and against the reproduction check (faked results and any)."""
    detectors: list[tuple[str, str | None, Any]] = [
        (f"{JUDGE_PREFIX}{name}", None, lambda t, name=name: _one_judge(t, name)) for name in judges
    ] + [
        (SOURCE_JUDGES, rule, lambda t, rule=rule: judges_flags(t.judges.values(), rule))
        for rule in RULES
    ]
    references: list[tuple[str, Any, tuple[str, ...]]] = [
        (SOURCE_HUMAN, lambda t: human_flags(t.human)[0] if t.human else None, (*TYPES, ANY)),
        (
            SOURCE_REPRODUCTION,
            lambda t: reproduction_flags(t.reproduction) if t.reproduction else None,
            (HallucinationType.FAKED_EXPERIMENTAL_RESULTS, ANY),
        ),
    ]
    rows = []
    for reference, reference_flags, kinds in references:
        truth = [(t, flags) for t in tasks if (flags := reference_flags(t)) is not None]
        for detector, rule, detector_flags in detectors:
            called = [(detector_flags(t), flags) for t, flags in truth]
            for kind in kinds:
                pairs = [
                    (bool(mine[kind]), bool(theirs[kind]))
                    for mine, theirs in called
                    if mine is not None and mine[kind] is not None and theirs[kind] is not None
                ]
                rows.append(DetectionRow(detector, rule, reference, kind, binary_agreement(pairs)))
    return rows


def _one_judge(task: _Task, name: str) -> dict[str, Flag] | None:
    verdict = task.judges.get(name)
    return judge_flags(verdict) if verdict is not None else None


def canary_recall(query: FabricationQuery) -> dict[str, dict[str, TypeShare]]:
    """Per judge, and for the judges as the query combines them (its rule, or its one
    judge), the share of the stage's canaries of each type caught with that type."""
    twins = canary_twin_verdicts(stage=query.stage)
    names = sorted({name for twin in twins for name in twin.caught})

    def shares(flag_of: Any) -> dict[str, TypeShare]:
        return {kind: _share(flag_of(t) for t in twins if t.kind == kind) for kind in TYPES}

    def combined(twin: TwinVerdict) -> Flag:
        if query.judge:
            return twin.caught.get(query.judge)
        return rule_combine(list(twin.caught.values()), query.rule)

    result = {
        f"{JUDGE_PREFIX}{name}": shares(lambda t, name=name: t.caught.get(name)) for name in names
    }
    if names:
        result[SOURCE_JUDGES] = shares(combined)
    return result


def fabrication_report(
    query: FabricationQuery,
    *,
    counted: Mapping[int, SubmissionFacts] | None = None,
    candidates: QuerySet[Submission] | None = None,
    evidence: bool = True,
) -> FabricationReport:
    """Everything the fabrication page and `GET /api/fabrication/` show for a stage
    (only a board's `counted` submissions among its `candidates`, when given).
    Without `evidence`, the rates alone: no flagged tasks, no detection table."""
    query.check()
    tasks = _tasks(query, counted, candidates=candidates)
    judges = sorted({name for task in tasks for name in task.judges})
    if query.judge and query.judge not in judges:
        raise FabricationQueryInvalid(
            f"no judge named {query.judge!r} reviewed this stage", field="judge", code="unknown"
        )
    by_agent: dict[int, list[_Task]] = defaultdict(list)
    for task in tasks:
        by_agent[task.agent_id].append(task)
    agents = {a.pk: a for a in Agent.objects.filter(pk__in=list(by_agent))}
    rows: list[FabricationRow] = []
    for agent_id in sorted(by_agent, key=lambda pk: agents[pk].name):
        rows += _agent_rows(agents[agent_id], by_agent[agent_id], query, judges, evidence=evidence)
    return FabricationReport(
        query=query,
        types=TYPES,
        judges=judges,
        rows=rows,
        detection=_detection(tasks, judges) if evidence else [],
        canary_recall=canary_recall(query) if evidence else {},
    )


# --- for other pages ------------------------------------------------------------------


@dataclass(frozen=True)
class AgentFabrication:
    """The leaderboard's two fabrication columns for one agent."""

    rate: float | None  # the judges', under the rule
    human_rate: float | None  # the experts', any type


def fabrication_by_agent(
    *,
    stage: str,
    rule: str = DEFAULT_RULE,
    judge: str = "",
    counted: Mapping[int, SubmissionFacts],
    candidates: QuerySet[Submission],
    panel_judges: tuple[str, ...] | None = None,
) -> dict[str, AgentFabrication]:
    """`{agent name: AgentFabrication}` for the leaderboard's experiment and end2end
    tabs, over the tasks the board counts (`counted`, chosen among `candidates`)."""
    if stage not in FABRICATION_STAGES:
        return {}

    def report_of(query: FabricationQuery) -> FabricationReport:
        return fabrication_report(query, counted=counted, candidates=candidates, evidence=False)

    try:
        report = report_of(
            FabricationQuery(stage=stage, rule=rule, judge=judge, panel_judges=panel_judges)
        )
    except FabricationQueryInvalid:  # the chosen judge reviewed none of these tasks
        report = report_of(FabricationQuery(stage=stage, rule=rule, panel_judges=panel_judges))
        return {r.agent: AgentFabrication(None, r.rate) for r in report.rows if r.source == "human"}
    judges = {r.agent: r.rate for r in report.rows if r.source == SOURCE_JUDGES}
    human = {r.agent: r.rate for r in report.rows if r.source == SOURCE_HUMAN}
    return {
        agent: AgentFabrication(rate=judges.get(agent), human_rate=human.get(agent))
        for agent in judges.keys() | human.keys()
    }


@dataclass(frozen=True)
class ExpertDetection:
    """How the judges' "any hallucination" verdicts match the experts' check on a
    stage, over the leaderboard's tasks the experts checked."""

    by_judge: dict[str, BinaryAgreement]  # judge name -> its verdicts against the experts
    combined: BinaryAgreement  # the judges combined under the default rule
    n_checked: int  # the tasks with an expert verdict


def judge_detection_metrics(*, stage: str) -> ExpertDetection:
    """Each judge's detection of any hallucination against the experts'
    hallucination check (precision, recall, n, ... as a `BinaryAgreement`), and
    the judges' combined under the default rule. For the judges' leaderboard.

    Only the (agent, task) pairs the experts checked are read: the experts check
    a few papers, the board has thousands."""
    nothing = ExpertDetection({}, binary_agreement([]), 0)
    if stage not in FABRICATION_STAGES:
        return nothing
    pairs = set(
        public_hallucination_checks()
        .filter(submission__stage=stage)
        .values_list("submission__agent_id", "submission__task_id")
        .distinct()
    )
    if not pairs:
        return nothing
    # Every version of the checked (agent, task) pairs' submissions (and a few of
    # their neighbours'), so the board's newest counted version is among them.
    candidates = stage_submissions(stage=stage).filter(
        agent_id__in={agent for agent, _ in pairs}, task_id__in={task for _, task in pairs}
    )
    # Every judge, in a panel or not: the judges' board compares them all.
    every_judge = tuple(Judge.objects.values_list("name", flat=True))
    tasks = [
        t
        for t in _tasks(
            FabricationQuery(stage=stage, panel_judges=every_judge), candidates=candidates
        )
        if t.human
    ]
    judges = sorted({name for task in tasks for name in task.judges})
    by_judge: dict[str, BinaryAgreement] = {}
    combined = binary_agreement([])
    for row in _detection(tasks, judges):
        if row.reference != SOURCE_HUMAN or row.type != ANY:
            continue
        if row.rule is None:
            by_judge[row.detector.removeprefix(JUDGE_PREFIX)] = row.agreement
        elif row.rule == DEFAULT_RULE:
            combined = row.agreement
    return ExpertDetection(by_judge, combined, len(tasks))


def fabrication_query_parse(params: Any) -> FabricationQuery:
    """The query of `?stage=S&rule=R&judge=NAME` (page and API alike); ValidationFailed
    names a bad parameter."""
    query = FabricationQuery(
        stage=params.get("stage") or Stage.END2END,
        rule=params.get("rule") or DEFAULT_RULE,
        judge=params.get("judge") or "",
    )
    query.check()
    return query
