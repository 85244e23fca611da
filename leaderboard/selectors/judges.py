"""The judges' leaderboard: which judge to trust, per stage.

One row per judge, one for the mean of the judges (the stage score the
leaderboard uses), one for a human expert (how far one expert is from
another: the bar a judge is held to) and one for a trivial baseline judge
that scores by paper length alone (a judge no better than it is measuring
length). Every figure is a `Cell` with the number of items it rests on, and
a figure that cannot be computed says why instead of showing a number.

- Agreement per dimension: mean |judge - human| with its 95% interval,
  Spearman's rho, Krippendorff's alpha of the humans with the judge, and the
  Mann-Whitney test of the agreement page (`reviews.selectors`), so the two
  pages never disagree.
- Mean score given and spread (standard deviation) of its Overall scores.
- Self-preference: its mean Overall on agents of its own model family minus
  its mean on the others, with a bootstrap interval.
- Length bias: Spearman's rho between paper length and its Overall.
- Cost per judgment, median latency and failure rate of its scoring
  judgments (what the board's scores rest on); its hallucination reviews'
  cost per review in a column of their own.
- Fabrication recall and precision: its "any hallucination" verdicts against
  the experts' hallucination check, on the papers both gave one
  (`leaderboard.selectors.fabrication`); the mean row's are the judges' combined under
  the leaderboard's default rule (`any`).
- Canaries: per hallucination type, of the planted fabrications of the type
  (`judging.canary_selectors`), the share it flagged with the right type and
  with any type, the share whose finding points at the planted place, and its
  false alarms on the unchanged controls. The canaries count nowhere else on
  the board.
"""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median, pstdev
from typing import Any

from django.db.models import Count, Q, Sum

from benchmark.models import ModelFamily
from common.errors import ValidationFailed
from common.proportions import BinaryAgreement
from common.stats import TOO_FEW, percentile_interval, resampled_means, spearman, wilson_interval
from judging.canary_selectors import JudgeCanaries, Rate, canary_scores
from judging.models import (
    DriftCheck,
    HallucinationType,
    Judge,
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
)
from judging.selectors import done_scores
from reviews.agreement import DimensionAgreement, agreement_compute
from reviews.selectors import agreement_dimensions, agreements_for_stage, human_score_rows
from submissions.models import Artifact, ArtifactKind, Stage, Submission

from .board import stage_dimensions
from .counting import LEADERBOARD_STAGES
from .fabrication import FABRICATION_STAGES, ExpertDetection, judge_detection_metrics

MIN_FOR_SPEARMAN = 3
MIN_PER_GROUP = 2

KIND_JUDGE, KIND_MEAN, KIND_HUMAN, KIND_BASELINE = "judge", "mean", "human", "baseline"
MEAN_ROW, HUMAN_ROW, BASELINE_ROW = "mean of judges", "human expert", "length baseline"

# Which artifacts are "the paper" of a stage's submission, for its length.
DOCUMENT_KINDS: dict[str, tuple[str, ...]] = {
    Stage.IDEA: (ArtifactKind.IDEA,),
    Stage.PROPOSAL: (ArtifactKind.PROPOSAL,),
    Stage.EXPERIMENT: (ArtifactKind.RESULTS, ArtifactKind.PAPER),
    Stage.PAPER: (ArtifactKind.PAPER,),
    Stage.END2END: (ArtifactKind.PAPER,),
}


@dataclass(frozen=True)
class Cell:
    """A figure, the number of items behind it, its 95% interval where it has
    one, and why it is empty when it is."""

    value: float | None
    n: int
    interval: tuple[float, float] | None = None
    unavailable: str = ""


def _empty(reason: str, n: int = 0) -> Cell:
    return Cell(None, n, None, reason)


@dataclass(frozen=True)
class DimensionCells:
    dimension: str
    mean_abs_diff: Cell
    spearman_rho: Cell
    krippendorff_alpha: Cell
    mann_whitney_p: Cell
    mann_whitney_p_holm: Cell
    rank_biserial: Cell


@dataclass(frozen=True)
class DriftSummary:
    checked_at: str
    n_rescored: int
    max_mean_abs_change: float | None
    mean_abs_change: dict[str, float]
    n_changed_2plus: dict[str, int]
    flagged: bool


@dataclass(frozen=True)
class CanaryTypeCells:
    type: str
    recall: Cell  # flagged with the planted type
    recall_any: Cell  # flagged with any type
    located: Cell  # a finding of the type points at the planted place
    false_alarm: Cell  # of the controls, flagged with this type


@dataclass(frozen=True)
class CanaryCells:
    by_type: list[CanaryTypeCells]
    false_alarm: Cell  # of the controls, flagged at all
    n_twins: int
    n_controls: int


@dataclass(frozen=True)
class JudgeBoardRow:
    name: str
    kind: str
    model: str
    model_family: str
    agreement: list[DimensionCells]
    mean_score: Cell
    spread: Cell
    self_preference: Cell
    length_bias: Cell
    cost_per_judgment: Cell
    median_latency_seconds: Cell
    failure_rate: Cell
    cost_per_hallucination_review: Cell
    fabrication_recall: Cell
    fabrication_precision: Cell
    drift: DriftSummary | None = None
    canaries: CanaryCells | None = None


@dataclass(frozen=True)
class JudgeBoard:
    stage: str
    overall_key: str
    dimensions: list[str]
    rows: list[JudgeBoardRow]
    n_reviews: int
    sort: str = ""


# --- the figures, on plain data ------------------------------------------------------


def _agreement_cells(row: DimensionAgreement) -> DimensionCells:
    why = row.unavailable

    def cell(name: str, n: int, interval: tuple[float, float] | None = None) -> Cell:
        value = getattr(row, name)
        return Cell(value, n, interval, why.get(name, "") if value is None else "")

    return DimensionCells(
        dimension=row.dimension,
        mean_abs_diff=cell(
            "mean_abs_diff_human_llm", row.n_human_llm, row.ci_mean_abs_diff_human_llm
        ),
        spearman_rho=cell("spearman_rho", row.n_papers_spearman),
        krippendorff_alpha=cell("krippendorff_alpha_humans_llm", row.n_reviews),
        mann_whitney_p=cell("p_value", row.n_human_human + row.n_human_llm),
        mann_whitney_p_holm=cell("p_value_holm", row.n_human_human + row.n_human_llm),
        rank_biserial=cell("rank_biserial", row.n_human_human + row.n_human_llm),
    )


_REFERENCE = "the experts are the reference this test compares the judges with"


def _human_cells(row: DimensionAgreement) -> DimensionCells:
    """An expert against the other experts: the human-human gaps."""
    why = row.unavailable
    gap = row.mean_abs_diff_human_human
    alpha = row.krippendorff_alpha_humans
    return DimensionCells(
        dimension=row.dimension,
        mean_abs_diff=Cell(
            gap,
            row.n_human_human,
            row.ci_mean_abs_diff_human_human,
            why.get("mean_abs_diff_human_human", "") if gap is None else "",
        ),
        spearman_rho=_empty("one expert's scores are not paired with a second on every paper"),
        krippendorff_alpha=Cell(
            alpha,
            row.n_reviews,
            None,
            why.get("krippendorff_alpha_humans", "") if alpha is None else "",
        ),
        mann_whitney_p=_empty(_REFERENCE),
        mann_whitney_p_holm=_empty(_REFERENCE),
        rank_biserial=_empty(_REFERENCE),
    )


def scores_cell(values: Sequence[float]) -> tuple[Cell, Cell]:
    """The mean and the standard deviation of a scorer's Overall scores."""
    if not values:
        return _empty("no Overall score on this stage"), _empty("no Overall score on this stage")
    spread = (
        Cell(pstdev(values), len(values))
        if len(values) >= 2
        else _empty("needs at least 2 scores", len(values))
    )
    return Cell(sum(values) / len(values), len(values)), spread


def spearman_cell(x: Sequence[float], y: Sequence[float]) -> Cell:
    n = len(x)
    rho = spearman(x, y, min_n=MIN_FOR_SPEARMAN)
    if rho.reason == TOO_FEW:
        return _empty(f"needs at least {MIN_FOR_SPEARMAN} papers with a length (has {n})", n)
    if rho.rho is None:
        return _empty("no variation to correlate", n)
    return Cell(rho.rho, n)


def self_preference_cell(own: Sequence[float], others: Sequence[float]) -> Cell:
    """Mean on its own family's agents minus mean on the others, with a
    bootstrap interval (each group resampled on its own)."""
    n = len(own) + len(others)
    if len(own) < MIN_PER_GROUP or len(others) < MIN_PER_GROUP:
        return _empty(
            f"needs {MIN_PER_GROUP} scores of its own family's agents and of others' "
            f"(has {len(own)} and {len(others)})",
            n,
        )
    # Two draws of one computation: streams 1 and 2 of the seed policy.
    differences = resampled_means(own, 1) - resampled_means(others, 2)
    difference = sum(own) / len(own) - sum(others) / len(others)
    return Cell(float(difference), n, percentile_interval(differences))


def length_scores(lengths: Mapping[int, int]) -> dict[int, float]:
    """The baseline judge: the longest paper gets 10, the shortest 1, the rest
    by rank between them (ties share their mean rank); one paper gets 5.5."""
    if not lengths:
        return {}
    ids = list(lengths)
    if len(ids) == 1:
        return {ids[0]: 5.5}
    from scipy import stats

    ranks = stats.rankdata([lengths[i] for i in ids])
    return {i: 1 + 9 * (float(r) - 1) / (len(ids) - 1) for i, r in zip(ids, ranks, strict=True)}


# --- the database reads --------------------------------------------------------------


def submission_lengths(*, stage: str) -> dict[int, int]:
    """{submission id: size in bytes of its paper} for the stage (those with one)."""
    rows = (
        Artifact.objects.filter(
            submission__stage=stage,
            submission__agent__is_system=False,
            kind__in=DOCUMENT_KINDS[stage],
        )
        .values("submission_id")
        .annotate(size=Sum("size"))
        .values_list("submission_id", "size")
        .order_by()
    )
    return {sid: int(size) for sid, size in rows}


@dataclass
class _JudgeFacts:
    overall: dict[int, float] = field(default_factory=dict)  # submission -> Overall
    own_family: list[float] = field(default_factory=list)
    other_family: list[float] = field(default_factory=list)
    # Of its scoring judgments (what the board's scores rest on).
    cost_total: float = 0.0
    n_costed: int = 0
    latencies: list[float] = field(default_factory=list)
    n_done: int = 0
    n_failed: int = 0
    # Of its hallucination reviews: their cost is not a scoring judgment's.
    review_cost_total: float = 0.0
    n_reviews_costed: int = 0


def _judgment_facts(stage: str, facts: dict[int, _JudgeFacts]) -> None:
    """Counts and costs per judge and kind in one grouped query; the scoring
    judgments' latencies (for a median) in a second."""
    # The canaries' reviews are scored on their own (`canary_scores`), not here.
    judgments = Judgment.objects.filter(
        submission__stage=stage,
        submission__agent__is_system=False,
        condition=JudgingCondition.WITH_CODE,
    ).order_by()
    done = Q(status=JudgmentStatus.DONE)
    for judge_id, kind, n_done, n_failed, cost, n_costed in (
        judgments.values("judge_id", "kind")
        .annotate(
            n_done=Count("id", filter=done),
            n_failed=Count("id", filter=Q(status=JudgmentStatus.FAILED)),
            cost=Sum("cost_usd", filter=done),
            n_costed=Count("cost_usd", filter=done),
        )
        .values_list("judge_id", "kind", "n_done", "n_failed", "cost", "n_costed")
    ):
        f = facts[judge_id]
        if kind == JudgmentKind.SCORE:
            f.n_done, f.n_failed = n_done, n_failed
            f.cost_total, f.n_costed = float(cost or 0), n_costed
        else:
            f.review_cost_total, f.n_reviews_costed = float(cost or 0), n_costed
    for judge_id, latency in judgments.filter(
        done, kind=JudgmentKind.SCORE, latency_seconds__isnull=False
    ).values_list("judge_id", "latency_seconds"):
        facts[judge_id].latencies.append(float(latency or 0))  # never null here


def _judge_facts(stage: str, overall_key: str) -> dict[int, _JudgeFacts]:
    """Per judge id, its Overall scores and its judgments' costs, latencies and
    outcomes on the stage (judged with code). Three queries."""
    facts: dict[int, _JudgeFacts] = defaultdict(_JudgeFacts)
    _judgment_facts(stage, facts)
    scores = (
        done_scores(submission_ids=Submission.objects.public().filter(stage=stage).values("id"))
        .filter(dimension=overall_key)
        .values_list(
            "judgment__judge_id",
            "judgment__submission_id",
            "judgment__judge__model_family",
            "judgment__submission__agent__model_family",
            "score",
        )
        .order_by()
    )
    for judge_id, sid, judge_family, agent_family, score in scores:
        f = facts[judge_id]
        f.overall[sid] = float(score)
        own = judge_family == agent_family and judge_family != ModelFamily.OTHER
        (f.own_family if own else f.other_family).append(float(score))
    return facts


def _last_drift(judge_ids: list[int]) -> dict[int, DriftSummary]:
    result: dict[int, DriftSummary] = {}
    for check in DriftCheck.objects.filter(judge_id__in=judge_ids).order_by("-created_at", "-id"):
        if check.judge_id not in result:
            result[check.judge_id] = DriftSummary(
                checked_at=check.created_at.isoformat(),
                n_rescored=check.n_rescored,
                max_mean_abs_change=check.max_mean_abs_change,
                mean_abs_change=dict(check.mean_abs_change),
                n_changed_2plus=dict(check.n_changed_2plus),
                flagged=check.flagged,
            )
    return result


# --- the board -----------------------------------------------------------------------

_NOT_A_MODEL = "not an LLM judge"
_NOT_LOGGED = "no judgment of its own"
_NO_VERDICT = "scores by length alone: gives no hallucination verdict"


def detection_cells(agreement: BinaryAgreement | None, *, why_none: str) -> tuple[Cell, Cell]:
    """Recall (of the papers the experts flagged, the share it flagged) and
    precision (of those it flagged, the share the experts flagged), each with its
    Wilson interval and its denominator as n."""
    if agreement is None or not agreement.n:
        return _empty(why_none), _empty(why_none)
    tp, n = agreement.true_positive, agreement.n
    flagged_by_experts = tp + agreement.false_negative
    flagged_by_it = tp + agreement.false_positive
    recall = (
        Cell(tp / flagged_by_experts, flagged_by_experts, wilson_interval(tp, flagged_by_experts))
        if flagged_by_experts
        else _empty(f"the experts found no hallucination in the {n} papers both checked")
    )
    precision = (
        Cell(tp / flagged_by_it, flagged_by_it, wilson_interval(tp, flagged_by_it))
        if flagged_by_it
        else _empty(f"it flagged none of the {n} papers both checked")
    )
    return recall, precision


def _detection_why_none(stage: str, detection: ExpertDetection) -> str:
    if stage not in FABRICATION_STAGES:
        return "no expert hallucination check on this stage"
    if not detection.n_checked:
        return "the experts checked none of this stage's papers for hallucinations"
    return f"no hallucination verdict on the {detection.n_checked} papers the experts checked"


def _rate_cell(rate: Rate, why_none: str) -> Cell:
    if rate.value is None:
        return _empty(why_none)
    return Cell(rate.value, rate.n, rate.interval)


_NO_TWIN = "it reviewed no canary with a planted fabrication of this type"
_NO_CONTROL = "it reviewed no canary control"


def canary_cells(scores: JudgeCanaries | None) -> CanaryCells:
    """A judge's canary figures; every cell empty, saying why, without a review."""
    by_type = []
    for kind in HallucinationType.values:
        score = scores.by_kind[kind] if scores is not None else None
        if score is None:
            empty = _empty(_NO_TWIN)
            by_type.append(CanaryTypeCells(kind, empty, empty, empty, _empty(_NO_CONTROL)))
            continue
        by_type.append(
            CanaryTypeCells(
                type=kind,
                recall=_rate_cell(score.recall_type, _NO_TWIN),
                recall_any=_rate_cell(score.recall_any, _NO_TWIN),
                located=_rate_cell(score.located, _NO_TWIN),
                false_alarm=_rate_cell(score.false_alarm, _NO_CONTROL),
            )
        )
    return CanaryCells(
        by_type=by_type,
        false_alarm=(
            _rate_cell(scores.false_alarm_any, _NO_CONTROL)
            if scores is not None
            else _empty(_NO_CONTROL)
        ),
        n_twins=scores.n_twins if scores is not None else 0,
        n_controls=scores.n_controls if scores is not None else 0,
    )


def _judge_row(
    judge: Judge,
    facts: _JudgeFacts,
    agreement: list[DimensionAgreement],
    lengths: Mapping[int, int],
    drift: DriftSummary | None,
    detection: tuple[Cell, Cell],
    canaries: JudgeCanaries | None = None,
) -> JudgeBoardRow:
    recall, precision = detection
    values = list(facts.overall.values())
    mean, spread = scores_cell(values)
    with_length = [sid for sid in facts.overall if sid in lengths]
    attempted = facts.n_done + facts.n_failed
    return JudgeBoardRow(
        name=judge.name,
        kind=KIND_JUDGE,
        model=judge.model,
        model_family=judge.model_family,
        agreement=[_agreement_cells(row) for row in agreement],
        mean_score=mean,
        spread=spread,
        self_preference=(
            _empty("its model family is 'other': no family to prefer")
            if judge.model_family == ModelFamily.OTHER
            else self_preference_cell(facts.own_family, facts.other_family)
        ),
        length_bias=spearman_cell(
            [lengths[s] for s in with_length], [facts.overall[s] for s in with_length]
        ),
        cost_per_judgment=(
            Cell(facts.cost_total / facts.n_costed, facts.n_costed)
            if facts.n_costed
            else _empty("no scoring judgment with a recorded cost (imported ones have none)")
        ),
        median_latency_seconds=(
            Cell(median(facts.latencies), len(facts.latencies))
            if facts.latencies
            else _empty("no scoring judgment with a recorded latency (imported ones have none)")
        ),
        failure_rate=(
            Cell(facts.n_failed / attempted, attempted)
            if attempted
            else _empty("no finished judgment on this stage")
        ),
        cost_per_hallucination_review=(
            Cell(facts.review_cost_total / facts.n_reviews_costed, facts.n_reviews_costed)
            if facts.n_reviews_costed
            else _empty("no hallucination review with a recorded cost")
        ),
        fabrication_recall=recall,
        fabrication_precision=precision,
        drift=drift,
        canaries=canary_cells(canaries),
    )


def _other_row(
    name: str,
    kind: str,
    cells: list[DimensionCells],
    overall: Mapping[int, float],
    lengths: Mapping[int, int],
    *,
    why_not: str,
    detection: tuple[Cell, Cell],
) -> JudgeBoardRow:
    recall, precision = detection
    mean, spread = scores_cell(list(overall.values()))
    with_length = [sid for sid in overall if sid in lengths]
    return JudgeBoardRow(
        name=name,
        kind=kind,
        model="",
        model_family="",
        agreement=cells,
        mean_score=mean,
        spread=spread,
        self_preference=_empty(why_not),
        length_bias=spearman_cell(
            [lengths[s] for s in with_length], [overall[s] for s in with_length]
        ),
        cost_per_judgment=_empty(_NOT_LOGGED),
        median_latency_seconds=_empty(_NOT_LOGGED),
        failure_rate=_empty(_NOT_LOGGED),
        cost_per_hallucination_review=_empty(_NOT_LOGGED),
        fabrication_recall=recall,
        fabrication_precision=precision,
    )


def _human_overall(human_rows: Sequence[tuple[int, int, str, float]], key: str) -> dict[int, float]:
    by_paper: dict[int, list[float]] = defaultdict(list)
    for paper, _reviewer, dimension, score in human_rows:
        if dimension == key:
            by_paper[paper].append(float(score))
    return {paper: sum(v) / len(v) for paper, v in by_paper.items()}


class UnknownBoardStage(ValidationFailed, LookupError):
    default_code = "invalid_choice"


def judge_board_compute(*, stage: str) -> JudgeBoard:
    """Long because each column reads its rows once for every judge, then the rows are built."""
    if stage not in LEADERBOARD_STAGES:
        raise UnknownBoardStage(
            f"unknown stage {stage!r}; one of {', '.join(LEADERBOARD_STAGES)}", field="stage"
        )
    overall_key, _dimensions = stage_dimensions(stage)
    facts = _judge_facts(stage, overall_key)
    canaries = canary_scores(stage=stage)
    # A judge that has reviewed only canaries still has a row: what it catches.
    judges = list(
        Judge.objects.filter(Q(id__in=list(facts)) | Q(name__in=list(canaries))).order_by("name")
    )
    lengths = submission_lengths(stage=stage)
    human_rows = human_score_rows(stage=stage)
    mean_agreement, *judge_agreements = agreements_for_stage(
        stage=stage, judges=[None, *(judge.name for judge in judges)]
    )
    dimensions = [row.dimension for row in mean_agreement.dimensions]
    drift = _last_drift([j.id for j in judges])
    detection = judge_detection_metrics(stage=stage)
    why_none = _detection_why_none(stage, detection)
    rows = [
        _judge_row(
            judge,
            facts[judge.id],
            agreement.dimensions,
            lengths,
            drift.get(judge.id),
            detection_cells(detection.by_judge.get(judge.name), why_none=why_none),
            canaries.get(judge.name),
        )
        for judge, agreement in zip(judges, judge_agreements, strict=True)
    ]
    # The mean of the judges: the stage score, per submission.
    totals: dict[int, list[float]] = defaultdict(list)
    for f in facts.values():
        for sid, value in f.overall.items():
            totals[sid].append(value)
    mean_overall = {sid: sum(v) / len(v) for sid, v in totals.items()}
    rows.append(
        _other_row(
            MEAN_ROW,
            KIND_MEAN,
            [_agreement_cells(row) for row in mean_agreement.dimensions],
            mean_overall,
            lengths,
            why_not="judges of several families",
            # The judges' verdicts combined as the leaderboard's fabrication column does.
            detection=detection_cells(detection.combined, why_none=why_none),
        )
    )
    rows.append(
        _other_row(
            HUMAN_ROW,
            KIND_HUMAN,
            [_human_cells(row) for row in mean_agreement.dimensions],
            _human_overall(human_rows, overall_key),
            lengths,
            why_not=_NOT_A_MODEL,
            detection=(_empty(_REFERENCE), _empty(_REFERENCE)),
        )
    )
    baseline = length_scores(lengths)
    baseline_agreement, _plots = agreement_compute(
        human_rows,
        {sid: dict.fromkeys(dimensions, score) for sid, score in baseline.items()},
        dimensions=dimensions or agreement_dimensions(stage, set(), set()),
    )
    rows.append(
        _other_row(
            BASELINE_ROW,
            KIND_BASELINE,
            [_agreement_cells(row) for row in baseline_agreement],
            baseline,
            lengths,
            why_not=_NOT_A_MODEL,
            detection=(_empty(_NO_VERDICT), _empty(_NO_VERDICT)),
        )
    )
    return JudgeBoard(
        stage=stage,
        overall_key=overall_key,
        dimensions=dimensions,
        rows=rows,
        n_reviews=mean_agreement.n_reviews,
    )


# --- sorting -------------------------------------------------------------------------

# Columns to sort by; the agreement columns are the Overall dimension's.
SORT_KEYS = (
    "name",
    "mean_abs_diff",
    "spearman_rho",
    "krippendorff_alpha",
    "mann_whitney_p",
    "mean_score",
    "spread",
    "self_preference",
    "length_bias",
    "cost_per_judgment",
    "median_latency_seconds",
    "failure_rate",
    "cost_per_hallucination_review",
    "fabrication_recall",
    "fabrication_precision",
)


def _sort_value(row: JudgeBoardRow, key: str, overall_key: str) -> Any:
    if key == "name":
        return row.name
    if key in ("mean_abs_diff", "spearman_rho", "krippendorff_alpha", "mann_whitney_p"):
        cells = next((c for c in row.agreement if c.dimension == overall_key), None)
        return getattr(cells, key).value if cells else None
    cell: Cell = getattr(row, key)
    return cell.value


class UnknownJudgeSort(ValidationFailed, ValueError):
    default_code = "invalid_sort"


def judge_board_sort(board: JudgeBoard, sort: str) -> JudgeBoard:
    """Rows by `sort` (`-` first: descending), rows without a value last."""
    key = sort.lstrip("-")
    if key not in SORT_KEYS:
        raise UnknownJudgeSort(
            f"cannot sort by {key!r}; choose one of {', '.join(SORT_KEYS)}", field="sort"
        )
    present = [r for r in board.rows if _sort_value(r, key, board.overall_key) is not None]
    missing = [r for r in board.rows if _sort_value(r, key, board.overall_key) is None]
    present.sort(key=lambda r: r.name)
    present.sort(key=lambda r: _sort_value(r, key, board.overall_key), reverse=sort.startswith("-"))
    return JudgeBoard(
        stage=board.stage,
        overall_key=board.overall_key,
        dimensions=board.dimensions,
        rows=present + missing,
        n_reviews=board.n_reviews,
        sort=sort,
    )
