"""Every write of the judging app: rubrics, judges, queueing, running and
recording judgments, and reaping stuck ones. A submission's judging state is
not written anywhere: `selectors.submission_judging_state` derives it from the
judgments.

A judgment row is the truth about its work. A run claims it with a conditional
update (queued -> running) that also stamps a fresh `run_token`; the result is
written only while the token is still the run's own. So a message delivered
twice runs once, and a run that was given up for dead (requeued by
`judgments_reap_stuck`) can never write a second result over the new run.

The run uses the ORM throughout. Measured side by side with the hand-written SQL
it replaced (perf/judge_throughput.py, 600 judgments, 48 calls in flight,
lognormal answers with median 1.6 s, 2 shared cores): 44.3% against 44.4% of
the ideal, a tenth of a point, for 16.4 against 12.9 ms of worker CPU per
judgment.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)
from django.db.models import Max, Q
from django.utils import timezone

from common.broker import broker_memory_forget, broker_memory_lost, broker_memory_restored
from common.errors import Conflict, NotFound, ValidationFailed
from common.leases import Lease, lease_claim, lease_held, lease_reap, lease_release
from common.llm import LLMResponse, PermanentLLMError, RetriesExhausted, call_with_retries
from common.results import results_changed
from common.tasks import run_soon
from submissions.models import Stage, Submission, SubmissionStatus

from . import llm
from .callslots import CallSlotTimeout, call_slot
from .heartbeat import heartbeat_drop, heartbeat_hold
from .models import (
    DimensionScore,
    HallucinationFinding,
    Judge,
    JudgePanel,
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
    Rubric,
    StagePanel,
)
from .parsing import (
    ParsedFinding,
    ParsedHallucinationReview,
    ParsedReview,
    ReviewFormatError,
    hallucination_parse,
    review_parse,
)
from .prompts import PromptError, judge_prompt_build, reask_message
from .ratelimit import judge_call_turn, rate_limit_timeout
from .rubrics import DEFAULT_RUBRICS, HALLUCINATION_STAGES, hallucination_prompt

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Outages of the services around a run (a broker or cache restart, a dropped
# database connection): waited out and retried, never a judgment's failure.
TRANSIENT_SERVICE_ERRORS: tuple[type[BaseException], ...] = (ConnectionError, TimeoutError, OSError)
try:
    import redis.exceptions

    TRANSIENT_SERVICE_ERRORS += (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
except ImportError:  # pragma: no cover - redis is a dependency
    pass
LIMITER_OUTAGE_WAIT_SECONDS = 1.0
DATABASE_RETRIES = 5


def database_retry(write: Callable[[], T], *, what: str) -> T:
    """`write` again after a dropped connection (PostgreSQL restarted, the
    connection terminated): the connection is closed and the next try opens a
    new one. Other errors, and the last failure, propagate."""
    for attempt in range(1, DATABASE_RETRIES + 1):
        try:
            return write()
        except (OperationalError, InterfaceError) as exc:
            if attempt == DATABASE_RETRIES or connection.in_atomic_block:
                raise
            logger.warning("%s: database error (%s); retrying", what, exc)
            close_old_connections()
            connection.close()
            time.sleep(min(0.2 * 2**attempt, 5.0))
    raise AssertionError("unreachable")


# ---------------------------------------------------------------- rubrics


def ensure_default_rubrics(*, rubric_model: type[Rubric] | None = None) -> list[Rubric]:
    """Write the project's rubrics (version 1) for every judged stage that has none:
    the scoring rubric, and the hallucination rubric of the stages that get one.
    Idempotent; `rubric_model` lets a data migration pass its historical model (the
    first one's has no `kind`: every rubric then scores)."""
    model = rubric_model or Rubric
    has_kind = any(f.name == "kind" for f in model._meta.get_fields())
    created = []
    for stage, spec in DEFAULT_RUBRICS.items():
        scoring = model.objects.filter(stage=stage)
        if has_kind:
            scoring = scoring.filter(kind=JudgmentKind.SCORE)
        if scoring.exists():
            continue
        created.append(
            model.objects.create(
                stage=stage,
                version=1,
                dimensions=spec.dimension_data,
                overall_key="Overall",
                extra_fields=list(spec.extra_fields),
                prompt=spec.prompt(),
                source="MLR-Bench site default rubric",
                is_active=True,
            )
        )
    if not has_kind:
        return created
    for stage in HALLUCINATION_STAGES:
        if model.objects.filter(stage=stage, kind=JudgmentKind.HALLUCINATION).exists():
            continue
        created.append(
            model.objects.create(
                stage=stage,
                kind=JudgmentKind.HALLUCINATION,
                version=1,
                dimensions=[],
                overall_key="",
                extra_fields=[],
                prompt=hallucination_prompt(stage),
                source="MLR-Bench site default hallucination rubric",
                is_active=True,
            )
        )
    return created


class RubricError(ValidationFailed):
    pass


def rubric_import(
    *,
    stage: str,
    prompt: str,
    source: str = "",
    activate: bool = True,
    kind: str = JudgmentKind.SCORE,
    dimensions: list[dict[str, Any]] | None = None,
) -> tuple[Rubric, bool]:
    """Load a prompt text (for example the official MLR-Judge one) as the stage's next
    rubric version of its kind, with the stage's dimensions and scales (a
    hallucination rubric has none). The same text again returns the existing
    version. Returns (rubric, created). `dimensions`: the version's own dimensions
    and scales instead (MLRC-Bench's 1-5 rubric, `rubrics.mlrc_bench_dimensions`);
    its overall key is `Overall` only where they have one."""
    if stage not in DEFAULT_RUBRICS:
        raise RubricError(
            f"unknown stage {stage!r}; judged stages are {', '.join(DEFAULT_RUBRICS)}"
        )
    if kind == JudgmentKind.HALLUCINATION and stage not in HALLUCINATION_STAGES:
        raise RubricError(
            f"the {stage} stage gets no hallucination review; those that do are "
            f"{', '.join(HALLUCINATION_STAGES)}"
        )
    prompt = prompt.strip()
    if not prompt:
        raise RubricError("the prompt text is empty")
    existing = (
        Rubric.objects.filter(stage=stage, kind=kind, prompt=prompt).order_by("-version").first()
    )
    if existing:
        if activate and not existing.is_active:
            existing.is_active = True
            existing.save(update_fields=["is_active"])
        return existing, False
    spec = DEFAULT_RUBRICS[stage]
    same_kind = Rubric.objects.filter(stage=stage, kind=kind)
    base = same_kind.order_by("-version").first()
    scoring = kind == JudgmentKind.SCORE
    for _ in range(3):  # two imports at once: the loser takes the next number
        version = (same_kind.aggregate(v=Max("version"))["v"] or 0) + 1
        try:
            with transaction.atomic():
                rubric = Rubric.objects.create(
                    stage=stage,
                    kind=kind,
                    version=version,
                    dimensions=(
                        dimensions
                        if dimensions is not None
                        else base.dimensions
                        if base
                        else spec.dimension_data
                        if scoring
                        else []
                    ),
                    overall_key=(
                        "Overall"
                        if scoring
                        and (dimensions is None or any(d["key"] == "Overall" for d in dimensions))
                        else ""
                    ),
                    extra_fields=(
                        []
                        if dimensions is not None
                        else base.extra_fields
                        if base
                        else list(spec.extra_fields)
                        if scoring
                        else []
                    ),
                    prompt=prompt,
                    source=source[:300],
                    is_active=activate,
                )
            return rubric, True
        except IntegrityError:
            continue
    raise RubricError("could not pick a version number; try again")


def rubric_current(*, stage: str, kind: str = JudgmentKind.SCORE) -> Rubric | None:
    """The rubric new judgments of a stage and kind use: the highest active version."""
    return (
        Rubric.objects.filter(stage=stage, kind=kind, is_active=True).order_by("-version").first()
    )


def judgment_kinds_all() -> tuple[str, ...]:
    """What every active judge runs for a submission: scores, and the hallucination
    review where the stage has one (`rubrics.HALLUCINATION_STAGES`), unless the site
    turned that pass off (`JUDGE_HALLUCINATION_REVIEWS`)."""
    if not settings.JUDGE_HALLUCINATION_REVIEWS:
        return (JudgmentKind.SCORE,)
    return (JudgmentKind.SCORE, JudgmentKind.HALLUCINATION)


# ---------------------------------------------------------------- judges


class JudgeError(ValidationFailed):
    pass


@dataclass(frozen=True)
class JudgeAdded:
    judge: Judge
    # The check call's answer; None when it was not checked.
    check: LLMResponse | None = None


def judge_create(
    *,
    name: str,
    model: str,
    api_base: str = "",
    api_key_env: str = "",
    model_family: str = "other",
    requests_per_minute: int = 60,
    temperature: float = 0.0,
    max_tokens: int = 4096,
    timeout_seconds: float = 120.0,
    input_usd_per_mtok: Decimal | None = None,
    output_usd_per_mtok: Decimal | None = None,
    is_active: bool = True,
    check: bool = False,
) -> JudgeAdded:
    """A new judge, in no panel (so no board's scores move). With `check`, its model
    is called once first (`judge_check`) and nothing is saved when it fails."""
    from django.core.exceptions import ValidationError

    if Judge.objects.filter(name=name).exists():
        raise JudgeError(f"a judge named {name!r} exists already")
    judge = Judge(
        name=name,
        model=model.strip(),
        api_base=api_base.strip(),
        api_key_env=api_key_env.strip(),
        model_family=model_family,
        requests_per_minute=requests_per_minute,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_seconds=timeout_seconds,
        input_usd_per_mtok=input_usd_per_mtok,
        output_usd_per_mtok=output_usd_per_mtok,
        is_active=is_active,
    )
    try:
        judge.full_clean()
    except ValidationError as exc:
        raise JudgeError(
            "; ".join(
                " ".join(msgs) if key == "__all__" else f"{key}: {' '.join(msgs)}"
                for key, msgs in exc.message_dict.items()
            )
        ) from exc
    if timeout_seconds <= 0:
        raise JudgeError("timeout_seconds: must be positive")
    answer = judge_check(judge=judge) if check else None
    judge.save()
    return JudgeAdded(judge=judge, check=answer)


class JudgeCheckFailed(JudgeError):
    default_code = "judge_check_failed"


def judge_check(*, judge: Judge) -> LLMResponse:
    """One small call to the judge's model through the gateway: its answer's usage,
    or JudgeCheckFailed with the provider's reason (a bad key, no server, an
    unknown model)."""
    from common.llm import LLMError, model_check

    from .llm import judge_model_config

    try:
        return model_check(judge_model_config(judge))
    except LLMError as exc:
        raise JudgeCheckFailed(f"judge {judge.name} ({judge.model}) did not answer: {exc}") from exc


def judge_set_active(*, name: str, active: bool) -> Judge:
    updated = Judge.objects.filter(name=name).update(is_active=active)
    if not updated:
        raise JudgeError(f"no judge named {name!r}")
    # Which submissions still await a judge (their judging state), on every stage.
    results_changed(None)
    return Judge.objects.get(name=name)


# ---------------------------------------------------------------- queueing


@dataclass
class QueueReport:
    created: int = 0
    requeued: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)
    judgment_ids: list[int] = field(default_factory=list)


def _send(judgment_ids: list[int]) -> None:
    """Send the judgments' messages now; raises what the broker raises."""
    from .tasks import judgment_run_task

    if judgment_run_task.app.conf.task_always_eager:
        # No broker: after the response, never inside the upload's request.
        for judgment_id in judgment_ids:
            run_soon(functools.partial(judgment_run_task.delay, judgment_id))
        return
    # One producer (one broker connection) for the whole batch: `delay` would take
    # one from the pool and give it back for every message.
    with judgment_run_task.app.producer_or_acquire() as producer:
        for judgment_id in judgment_ids:
            judgment_run_task.apply_async((judgment_id,), producer=producer)


def _enqueue(judgment_ids: list[int]) -> None:
    try:
        _send(judgment_ids)
    except Exception:
        # After commit there is no one to tell: the rows stay queued. Forgetting the
        # broker's marker makes the next look (the reaper's tick, a worker's
        # reconnection) send every queued judgment again, not the resend interval.
        logger.exception("could not send %d judgment(s); the reaper will", len(judgment_ids))
        broker_memory_forget(settings.CELERY_BROKER_URL)


def judgments_enqueue_on_commit(judgment_ids: list[int]) -> None:
    if judgment_ids:
        ids = list(judgment_ids)
        transaction.on_commit(lambda: _enqueue(ids), robust=True)


def judgments_queue(
    *,
    submissions: Iterable[Submission],
    judges: Iterable[Judge] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    force: bool = False,
    resend_queued: bool = False,
    kinds: Iterable[str] | None = None,
) -> QueueReport:
    """Queue each submission for each judge (the active ones by default) under the
    stage's current rubric of each kind (`kinds`, by default scores and, for the
    stages that have one, the hallucination review): new judgments are created,
    failed ones are queued again, done ones are left alone unless `force`. The
    messages go out after the
    transaction commits. `resend_queued` sends queued judgments' messages again
    (for a message lost with a broker; the claim makes a duplicate harmless).

    A few statements for the whole batch, whatever its size: queueing a stage
    for a pair of judges is the start of every judging run, and no worker starts
    before its commit."""
    report = QueueReport()
    judges = list(judges) if judges is not None else list(Judge.objects.filter(is_active=True))
    if not judges:
        report.skipped.append("no active judge (add one with `manage.py judges add`)")
        return report
    pairs = _submissions_with_rubrics(
        submissions,
        report,
        kinds=tuple(kinds) if kinds is not None else judgment_kinds_all(),
        # By default a stage's hallucination pass is off while no hallucination rubric
        # of it is active (an organiser's switch): not worth a "skipped" line.
        quiet_kinds=() if kinds is not None else (JudgmentKind.HALLUCINATION,),
    )
    if not pairs:
        return report

    def existing() -> dict[tuple[int, int, int], tuple[int, str]]:
        rows = (
            Judgment.objects.select_for_update()
            .filter(
                submission_id__in={submission.pk for submission, _ in pairs},
                judge_id__in={judge.pk for judge in judges},
                rubric_id__in={rubric.pk for _, rubric in pairs},
                condition=condition,
            )
            .values_list("submission_id", "judge_id", "rubric_id", "pk", "status")
        )
        return {(s, j, r): (pk, status) for s, j, r, pk, status in rows}

    keys = [(sub.pk, judge.pk, rubric.pk) for sub, rubric in pairs for judge in judges]
    kind_of = {rubric.pk: rubric.kind for _sub, rubric in pairs}
    with transaction.atomic():
        found = existing()
        missing = [key for key in keys if key not in found]
        if missing:
            # ignore_conflicts: a judgment another queueing created meanwhile is
            # taken as it is, by the second read.
            Judgment.objects.bulk_create(
                [
                    Judgment(
                        submission_id=s,
                        judge_id=j,
                        rubric_id=r,
                        kind=kind_of[r],
                        condition=condition,
                    )
                    for s, j, r in missing
                ],
                ignore_conflicts=True,
            )
            found = existing()
            report.created = len(missing)
        reset = _judgments_to_send(
            keys, found, set(missing), force=force, resend_queued=resend_queued, report=report
        )
        _judgments_reset(reset)
        judgments_enqueue_on_commit(report.judgment_ids)
    return report


@dataclass(frozen=True)
class JudgePlan:
    """What queueing would send one judge: how many judgments, and what they will
    cost at its price (an estimate from its own past judgments' tokens, else
    `PLAN_TOKENS_ASSUMED`; None when no price is known)."""

    judge: str
    judgments: int
    input_tokens_each: int
    output_tokens_each: int
    tokens_measured: bool
    cost_usd: Decimal | None


# A paper with its code and log, as the site's prompts send them: about what the
# sample's end-to-end judgments used. Only for a judge with no judgment yet.
PLAN_TOKENS_ASSUMED = (30_000, 2_000)


def judgments_queue_plan(
    *,
    submissions: Iterable[Submission],
    judges: Iterable[Judge] | None = None,
    condition: str = JudgingCondition.WITH_CODE,
    kinds: Iterable[str] | None = None,
) -> list[JudgePlan]:
    """Per judge, the judgments `judgments_queue` would send (new, failed, or left
    queued), and their estimated cost; writes nothing."""
    chosen = list(judges) if judges is not None else list(Judge.objects.filter(is_active=True))
    pairs = _submissions_with_rubrics(
        submissions,
        QueueReport(),
        kinds=tuple(kinds) if kinds is not None else judgment_kinds_all(),
        quiet_kinds=() if kinds is not None else (JudgmentKind.HALLUCINATION,),
    )
    if not chosen or not pairs:
        return []
    done = set(
        Judgment.objects.filter(
            submission_id__in={submission.pk for submission, _ in pairs},
            judge_id__in={judge.pk for judge in chosen},
            rubric_id__in={rubric.pk for _, rubric in pairs},
            condition=condition,
            status__in=[JudgmentStatus.DONE, JudgmentStatus.RUNNING],
        ).values_list("submission_id", "judge_id", "rubric_id")
    )
    return [
        _judge_plan(
            judge,
            sum((sub.pk, judge.pk, rubric.pk) not in done for sub, rubric in pairs),
        )
        for judge in chosen
    ]


def _judge_plan(judge: Judge, n: int) -> JudgePlan:
    from django.db.models import Avg

    from common.llm import cost_for_tokens

    usage = Judgment.objects.filter(
        judge=judge, status=JudgmentStatus.DONE, imported=False, input_tokens__isnull=False
    ).aggregate(i=Avg("input_tokens"), o=Avg("output_tokens"))
    measured = usage["i"] is not None and usage["o"] is not None
    each_in, each_out = (int(usage["i"]), int(usage["o"])) if measured else PLAN_TOKENS_ASSUMED
    each = cost_for_tokens(
        model=judge.model, own_price=judge.own_price, input_tokens=each_in, output_tokens=each_out
    )
    return JudgePlan(
        judge=judge.name,
        judgments=n,
        input_tokens_each=each_in,
        output_tokens_each=each_out,
        tokens_measured=measured,
        cost_usd=each * n if each is not None else None,
    )


def _submissions_with_rubrics(
    submissions: Iterable[Submission],
    report: QueueReport,
    *,
    kinds: tuple[str, ...],
    quiet_kinds: tuple[str, ...] = (),
) -> list[tuple[Submission, Rubric]]:
    """The ready submissions, each with its stage's current rubric of each kind asked
    for; the others are reported as skipped, with the reason. A stage without a
    hallucination review (idea, proposal) is skipped silently for that kind."""
    rubrics: dict[tuple[str, str], Rubric | None] = {}
    pairs: list[tuple[Submission, Rubric]] = []
    for submission in submissions:
        if submission.status != SubmissionStatus.READY:
            report.skipped.append(f"submission {submission.pk} is {submission.status}")
            continue
        for kind in kinds:
            if kind == JudgmentKind.HALLUCINATION and submission.stage not in HALLUCINATION_STAGES:
                continue
            key = (submission.stage, kind)
            if key not in rubrics:
                rubrics[key] = rubric_current(stage=submission.stage, kind=kind)
            rubric = rubrics[key]
            if rubric is None and kind in quiet_kinds:
                continue
            if rubric is None:
                what = "hallucination rubric" if kind == JudgmentKind.HALLUCINATION else "rubric"
                report.skipped.append(
                    f"submission {submission.pk}: no active {what} for the {submission.stage} stage"
                )
                continue
            pairs.append((submission, rubric))
    return pairs


def _judgments_to_send(
    keys: list[tuple[int, int, int]],
    found: dict[tuple[int, int, int], tuple[int, str]],
    created: set[tuple[int, int, int]],
    *,
    force: bool,
    resend_queued: bool,
    report: QueueReport,
) -> list[int]:
    """Count each (submission, judge, rubric) into the report and add the judgments
    to send to `report.judgment_ids`; returns those that must be reset first."""
    reset: list[int] = []
    for key in keys:
        pk, status = found[key]
        if key in created:
            pass
        elif status == JudgmentStatus.FAILED or (force and status == JudgmentStatus.DONE):
            reset.append(pk)
            report.requeued += 1
        elif status == JudgmentStatus.QUEUED and resend_queued:
            report.requeued += 1
        else:
            report.unchanged += 1
            continue
        report.judgment_ids.append(pk)
    return reset


def _judgments_reset(judgment_ids: list[int]) -> None:
    """Back to queued with nothing of the earlier runs left (scores, usage, error)."""
    if not judgment_ids:
        return
    # A done judgment re-run loses its scores from its stage's results.
    results_changed(
        Submission.objects.filter(judgments__pk__in=judgment_ids)
        .values_list("stage", flat=True)
        .distinct(),
        agreement=True,
    )
    DimensionScore.objects.filter(judgment_id__in=judgment_ids).delete()
    HallucinationFinding.objects.filter(judgment_id__in=judgment_ids).delete()
    Judgment.objects.filter(pk__in=judgment_ids).update(
        status=JudgmentStatus.QUEUED,
        run_token=None,
        strengths=[],
        weaknesses=[],
        confidence=None,
        has_hallucination=None,
        hallucination_details="",
        overall_assessment="",
        raw_response="",
        prompt_sha256="",
        input_tokens=None,
        output_tokens=None,
        cost_usd=None,
        latency_seconds=None,
        attempts=0,
        error="",
        imported=False,
        started_at=None,
        heartbeat_at=None,
        finished_at=None,
        updated_at=timezone.now(),
    )


class RerunRefused(Conflict):
    """Only a failed judgment can be re-run."""

    default_code = "not_failed"


def judgment_rerun(*, judgment_id: int) -> Judgment:
    """Queue a failed judgment again (the organiser's re-run button)."""
    with transaction.atomic():
        judgment = Judgment.objects.select_for_update().filter(pk=judgment_id).first()
        if judgment is None:
            raise NotFound("no such judgment")
        if judgment.status != JudgmentStatus.FAILED:
            raise RerunRefused(
                f"only a failed judgment can be re-run; this one is {judgment.status}"
            )
        _judgments_reset([judgment.pk])
        judgments_enqueue_on_commit([judgment.pk])
    judgment.refresh_from_db()
    return judgment


def submission_ready_judge(*, submission_id: int) -> QueueReport:
    """A submission became ready: queue it for every active judge. A method is
    judged twice, with its code and from its description alone, as MLRC-Bench
    compares both with the method's objective result."""
    submission = Submission.objects.filter(pk=submission_id).first()
    if submission is None:
        return QueueReport(skipped=[f"submission {submission_id} does not exist"])
    report = judgments_queue(submissions=[submission])
    if submission.stage == Stage.METHOD:
        without = judgments_queue(submissions=[submission], condition=JudgingCondition.NO_CODE)
        report.created += without.created
        report.requeued += without.requeued
        report.unchanged += without.unchanged
        report.skipped += without.skipped
        report.judgment_ids += without.judgment_ids
    return report


# ---------------------------------------------------------------- running


class JudgingFailed(Exception):
    """The judgment cannot be completed; the message is what the organiser reads,
    `raw` the judge's last answer when there was one."""

    def __init__(self, message: str, *, raw: str = ""):
        super().__init__(message)
        self.raw = raw


@dataclass
class _Usage:
    calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: Decimal | None = Decimal(0)
    latency_seconds: float = 0.0
    cost_known: bool = True

    def add(self, response: LLMResponse) -> None:
        if response.input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + response.input_tokens
        if response.output_tokens is not None:
            self.output_tokens = (self.output_tokens or 0) + response.output_tokens
        if response.cost_usd is None:
            self.cost_known = False
        elif self.cost_usd is not None:
            self.cost_usd += response.cost_usd
        self.latency_seconds += response.latency_seconds

    @property
    def cost(self) -> Decimal | None:
        # One call of unknown price makes the total unknown, never an undercount.
        return self.cost_usd if self.cost_known and self.calls else None


def _database_release() -> None:
    """Give this thread's database connection back before a wait of seconds (the
    judge's answer, the judge's next turn): with a pool (DATABASE_POOL_SIZE) to
    the threads that claim and record meanwhile, without one to PostgreSQL, so
    that 128 calls in flight do not hold 128 connections. The next query opens
    one again, milliseconds against the seconds a judge takes."""
    if not connection.in_atomic_block:
        connection.close()


class _Run:
    def __init__(self, judgment: Judgment, token: uuid.UUID):
        self.judgment = judgment
        self.token = token
        self.usage = _Usage()
        self.prompt_sha256 = ""
        self.deadline = time.monotonic() + settings.JUDGE_TASK_SOFT_TIME_LIMIT

    def _update_owned(self, **values: Any) -> bool:
        """Set fields of the judgment while it is still this run's (running, with the
        run's token); False, changing nothing, once it is not (given up for dead)."""
        rows = Judgment.objects.filter(pk=self.judgment.pk)
        return bool(lease_held(rows, lease=JUDGMENT_LEASE, token=self.token).update(**values))

    def _call_turn(self) -> float:
        """The judge's turn (judge_call_turn); while Redis cannot answer (a restart,
        a failover) the wait is a second and the run asks again: an outage of the
        limiter is transient, never the judgment's failure."""
        judge = self.judgment.judge
        try:
            return judge_call_turn(judge_id=judge.pk, limit=judge.requests_per_minute)
        except TRANSIENT_SERVICE_ERRORS as exc:
            logger.warning("judgment %s: rate limiter unreachable (%s)", self.judgment.pk, exc)
            return LIMITER_OUTAGE_WAIT_SECONDS

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """Hold a call slot of this process and a counted turn in the judge's rate
        limit, taken in that order, so that the call goes out the moment its turn
        is counted and the provider never sees more than the limit in a window
        (a turn taken before waiting for a slot let calls that waited spill into
        the next window). A thread that must wait for its turn gives its slot back
        while it waits: another judge's call can use it."""
        judge = self.judgment.judge
        while True:
            with call_slot(timeout=self.deadline - time.monotonic()):
                wait = self._call_turn()
                if wait <= 0:
                    yield
                    return
            logger.info(
                "judgment %s: the judge's limit of %d requests per minute is reached; "
                "next turn in %.1f s",
                self.judgment.pk,
                judge.requests_per_minute,
                wait,
            )
            if time.monotonic() + wait > self.deadline:
                raise JudgingFailed(str(rate_limit_timeout(judge.requests_per_minute)))
            _database_release()
            time.sleep(wait)

    def call(self, messages: list[dict[str, Any]]) -> LLMResponse:
        """One answer of the judge, transient errors retried under the gateway's
        policy (`common.llm.RetryPolicy`) within the run's deadline; each attempt
        takes the judge's rate-limit turn and a call slot first."""
        try:
            response = call_with_retries(
                lambda: self._attempt(messages),
                deadline=self.deadline,
                on_retry=lambda attempt, exc, delay: logger.info(
                    "judgment %s: %s; retrying in %.1f s", self.judgment.pk, exc, delay
                ),
            )
        except PermanentLLMError as exc:
            raise JudgingFailed(f"{exc} (not retried: retrying cannot fix this)") from exc
        except RetriesExhausted as exc:
            raise JudgingFailed(str(exc)) from exc.last
        self.usage.add(response)
        return response

    def _attempt(self, messages: list[dict[str, Any]]) -> LLMResponse:
        judge = self.judgment.judge
        if self.deadline - time.monotonic() <= 1:
            raise JudgingFailed("ran out of time before the judge answered")
        try:
            with self._turn():
                remaining = self.deadline - time.monotonic()
                if remaining <= 1:
                    raise JudgingFailed("ran out of time before the judge answered")
                self.usage.calls += 1
                if self.usage.calls > 1:
                    # Live progress for the submission page: a retry or a re-ask is
                    # on its way (the claim already said "call 1"). Best effort.
                    self._progress()
                _database_release()
                return llm.chat(judge=judge, messages=messages, timeout=remaining)
        except CallSlotTimeout as exc:
            raise JudgingFailed(f"ran out of time before the call: {exc}") from exc

    def _progress(self) -> None:
        try:
            self._update_owned(attempts=self.usage.calls, updated_at=timezone.now())
        except DatabaseError as exc:
            logger.warning("judgment %s: progress not saved (%s)", self.judgment.pk, exc)
            close_old_connections()

    def judge(self) -> tuple[ParsedReview | ParsedHallucinationReview, str, str]:
        judgment = self.judgment
        rubric = judgment.rubric
        prompt = judge_prompt_build(
            submission=judgment.submission,
            rubric=rubric,
            condition=judgment.condition,
            reads_pdf=llm.reads_pdf(judgment.judge),
        )
        self.prompt_sha256 = prompt.sha256
        messages = list(prompt.messages)
        asks = 1 + settings.JUDGE_MAX_REASKS
        problems: list[str] = []
        text = ""
        for ask in range(1, asks + 1):
            response = self.call(messages)
            text = response.text
            try:
                parsed = answer_parse(text, rubric=rubric)
            except ReviewFormatError as exc:
                problems = exc.problems
                logger.info("judgment %s: answer %d unusable: %s", judgment.pk, ask, exc)
                messages += [
                    {"role": "assistant", "content": text},
                    reask_message(problems, rubric),
                ]
                continue
            return parsed, text, prompt.sha256
        raise JudgingFailed(
            f"the judge's answer was not usable after {asks} tries: {'; '.join(problems)}",
            raw=text,
        )

    def record(self, parsed: ParsedReview | ParsedHallucinationReview, raw: str) -> bool:
        def write() -> bool:
            try:
                return self._record(parsed, raw, replace=False)
            except IntegrityError:
                # Scores left by an earlier run (a reset deletes them, so this is rare):
                # the whole record was rolled back; write it again over them.
                return self._record(parsed, raw, replace=True)

        return database_retry(write, what=f"judgment {self.judgment.pk}: record")

    def _record(
        self, parsed: ParsedReview | ParsedHallucinationReview, raw: str, *, replace: bool
    ) -> bool:
        with transaction.atomic():
            # The conditional update locks the row: a reaper cannot requeue it under us,
            # and a run whose token was replaced updates nothing and writes nothing.
            owned = self._update_finished(
                status=JudgmentStatus.DONE,
                raw=raw,
                latency_seconds=self.usage.latency_seconds,
                error="",
                **judgment_outcome_fields(parsed),
            )
            if not owned:
                return False
            if replace:
                DimensionScore.objects.filter(judgment_id=self.judgment.pk).delete()
                HallucinationFinding.objects.filter(judgment_id=self.judgment.pk).delete()
            judgment_details_write(judgment_id=self.judgment.pk, parsed=parsed)
        self.judgment.status = JudgmentStatus.DONE
        return True

    def fail(self, message: str, raw: str = "") -> bool:
        failed = database_retry(
            lambda: self._update_finished(
                status=JudgmentStatus.FAILED,
                raw=raw,
                latency_seconds=self.usage.latency_seconds or None,
                error=message[:5000],
            ),
            what=f"judgment {self.judgment.pk}: fail",
        )
        if failed:
            self.judgment.status = JudgmentStatus.FAILED
        return failed

    def release(self) -> None:
        """Back to queued, if still this run's, after a database outage."""
        try:
            database_retry(
                lambda: lease_release(
                    Judgment.objects.filter(pk=self.judgment.pk),
                    lease=JUDGMENT_LEASE,
                    token=self.token,
                    status=JudgmentStatus.QUEUED,
                    started_at=None,
                    heartbeat_at=None,
                    error="",
                    updated_at=timezone.now(),
                ),
                what=f"judgment {self.judgment.pk}: release",
            )
        except DatabaseError:
            # Still running with this token: once its heartbeat stops (the run ends
            # below), the reaper requeues it.
            logger.warning("judgment %s: left to the reaper", self.judgment.pk)

    def _update_finished(self, *, status: str, raw: str, **fields: Any) -> bool:
        """Write the outcome with what the run's calls used, if the judgment is still
        this run's."""
        usage = self.usage
        now = timezone.now()
        return self._update_owned(
            status=status,
            raw_response=raw,
            prompt_sha256=self.prompt_sha256,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost,
            attempts=usage.calls,
            finished_at=now,
            updated_at=now,
            **fields,
        )


def answer_parse(
    text_or_data: str | dict[str, Any], *, rubric: Rubric
) -> ParsedReview | ParsedHallucinationReview:
    """A judge's answer checked against its rubric: scores, or a hallucination review."""
    if rubric.kind == JudgmentKind.HALLUCINATION:
        return hallucination_parse(text_or_data)
    return review_parse(
        text_or_data, dimensions=rubric.dimensions, extra_fields=rubric.extra_fields or []
    )


def judgment_outcome_fields(parsed: ParsedReview | ParsedHallucinationReview) -> dict[str, Any]:
    """The judgment's own columns for a parsed answer (the judge run and the import)."""
    if isinstance(parsed, ParsedHallucinationReview):
        return {
            "strengths": [],
            "weaknesses": [],
            "confidence": parsed.confidence,
            "has_hallucination": parsed.has_hallucination,
            "hallucination_details": "",
            "overall_assessment": parsed.overall_assessment,
        }
    return {
        "strengths": parsed.strengths,
        "weaknesses": parsed.weaknesses,
        "confidence": parsed.confidence,
        "has_hallucination": parsed.has_hallucination,
        "hallucination_details": parsed.hallucination_details,
        "overall_assessment": "",
    }


def _findings_of(parsed: ParsedReview | ParsedHallucinationReview) -> list[ParsedFinding]:
    if isinstance(parsed, ParsedHallucinationReview):
        return parsed.findings
    # The experiment rubric's yes/no verdict: a finding without a type.
    if parsed.has_hallucination:
        return [ParsedFinding(type="", description=parsed.hallucination_details, evidence="")]
    return []


def judgment_details_write(
    *, judgment_id: int, parsed: ParsedReview | ParsedHallucinationReview
) -> None:
    """The rows under a judgment: its dimension scores, and its hallucination findings."""
    if isinstance(parsed, ParsedReview):
        DimensionScore.objects.bulk_create(
            DimensionScore(
                judgment_id=judgment_id,
                dimension=s.dimension,
                score=s.score,
                scale_min=s.scale_min,
                scale_max=s.scale_max,
                justification=s.justification,
            )
            for s in parsed.scores
        )
    HallucinationFinding.objects.bulk_create(
        HallucinationFinding(
            judgment_id=judgment_id,
            position=position,
            type=finding.type,
            description=finding.description,
            evidence=finding.evidence,
        )
        for position, finding in enumerate(_findings_of(parsed))
    )


# A running judgment's heartbeat is its worker process's (judging/heartbeat.py):
# silent for JUDGE_LEASE_STALE_SECONDS, its run is given up for dead.
JUDGMENT_LEASE = Lease(
    running=JudgmentStatus.RUNNING, no_token=None, heartbeat_field="heartbeat_at"
)


def _judgment_claim(*, judgment_id: int, token: uuid.UUID) -> Judgment | None:
    """queued -> running, stamped with the run's token, in one conditional update;
    then the judgment with what the run reads before its prompt, in one statement:
    the judge as it is now (an organiser may have changed its limit), the submission
    and its task. None when it was not queued (another delivery has it, it is
    finished, or it is gone)."""
    now = timezone.now()
    claimed = lease_claim(
        Judgment.objects.filter(pk=judgment_id),
        lease=JUDGMENT_LEASE,
        free=Q(status=JudgmentStatus.QUEUED),
        token=token,
        now=now,
        started_at=now,
        finished_at=None,
        attempts=1,
        error="",
        updated_at=now,
    )
    if not claimed:
        return None
    # Claimed (committed): a dropped connection from here on must not strand the row.
    return database_retry(
        lambda: (
            Judgment.objects.select_related("judge", "submission__task")
            .filter(pk=judgment_id, run_token=token)
            .first()
        ),
        what=f"judgment {judgment_id}: read after claim",
    )


def judgment_run(*, judgment_id: int) -> Judgment | None:
    """Run one queued judgment to `done` or `failed`. Returns the judgment (its
    `status` is the outcome; other fields are as claimed), or None, doing nothing,
    when it was not queued (claimed by another delivery, done, failed or deleted)."""
    token = uuid.uuid4()
    judgment = _judgment_claim(judgment_id=judgment_id, token=token)
    if judgment is None:
        return None
    run = _Run(judgment, token)
    heartbeat_hold(judgment_id=judgment_id, token=token, deadline=run.deadline)
    try:
        return _judgment_run_held(run)
    finally:
        heartbeat_drop(token=token)


def _judgment_run_held(run: _Run) -> Judgment:
    judgment, judgment_id = run.judgment, run.judgment.pk
    failure: tuple[str, str] | None = None
    try:
        judgment.rubric = rubric_by_id(judgment.rubric_id)
        parsed, raw, _sha = run.judge()
    except JudgingFailed as exc:
        failure = (str(exc), exc.raw)
    except PromptError as exc:
        failure = (f"cannot judge this submission: {exc}", "")
    except SoftTimeLimitExceeded:
        failure = ("ran past the judge task's soft time limit", "")
    except (OperationalError, InterfaceError):
        # The database went away under the run: not the judgment's fault. Give
        # the row back (queued) for the task's retry or the reaper, and re-raise.
        run.release()
        raise
    except Exception as exc:  # a bug must fail the judgment, not leave it running
        logger.exception("judgment %s failed unexpectedly", judgment_id)
        failure = (f"internal error: {type(exc).__name__}: {exc}", "")
    if failure is None:
        # Records the scores and the outcome in one transaction.
        finished = run.record(parsed, raw)
        if not finished:
            logger.warning("judgment %s: result of a run given up for dead discarded", judgment_id)
    else:
        finished = run.fail(*failure)
    if finished:
        # Its scores and outcome are committed (written with `update()` and
        # `bulk_create()`, which send no model signals): the results of its stage.
        results_changed([judgment.submission.stage], agreement=True)
    return judgment


# A rubric version never changes once written (a new text is a new version, and the
# admin shows a version's content read-only), so each process keeps the rows it has
# read; receivers.rubric_changed_receiver drops one that is saved or deleted anyway.
_rubrics: dict[int, Rubric] = {}


def rubric_by_id(rubric_id: int) -> Rubric:
    rubric = _rubrics.get(rubric_id)
    if rubric is None:
        rubric = Rubric.objects.get(pk=rubric_id)
        _rubrics[rubric_id] = rubric
    return rubric


def rubric_forget(rubric_id: int) -> None:
    _rubrics.pop(rubric_id, None)


def judgments_resend_queued(*, older_than: float | None = None) -> list[int]:
    """Send again the judgments `queued` for longer than `older_than` seconds
    (JUDGE_RESEND_QUEUED_SECONDS) since they were queued or last sent: their
    message may be gone (a broker restart, an enqueue that failed after commit,
    a claim that failed on a dead connection). A message that was not lost only
    meets a claim that does nothing, so this is safe to repeat. Each is stamped,
    so that it is sent again at most once per interval."""
    seconds = settings.JUDGE_RESEND_QUEUED_SECONDS if older_than is None else older_than
    now = timezone.now()
    with transaction.atomic():
        stale = _judgments_queued_stamp(
            now - timedelta(seconds=seconds),
            # A message a worker holds (a retry's countdown, a prefetched delivery)
            # dies with a killed worker until the broker's visibility timeout: every
            # queued judgment silent for the lease's seconds is sent again (a
            # duplicate meets a claim that does nothing).
            given_back_before=now - timedelta(seconds=settings.JUDGE_LEASE_STALE_SECONDS),
        )
        judgments_enqueue_on_commit(stale)
    if stale:
        logger.warning("sent %d queued judgment(s) again", len(stale))
    return stale


def _judgments_queued_stamp(
    cutoff: datetime, *, given_back_before: datetime | None = None
) -> list[int]:
    """Up to JUDGE_RESEND_BATCH judgments queued (or last sent) at `cutoff` or
    before, or, given `given_back_before`, given back by a run (claimed before:
    attempts) at that time or before; stamped as sent now, in the caller's
    transaction."""
    due = Q(updated_at__lte=cutoff)
    if given_back_before is not None:
        due |= Q(updated_at__lte=given_back_before)
    stale = list(
        Judgment.objects.filter(due, status=JudgmentStatus.QUEUED)
        .select_for_update(skip_locked=True)
        .order_by("pk")
        .values_list("pk", flat=True)[: settings.JUDGE_RESEND_BATCH]
    )
    Judgment.objects.filter(pk__in=stale, status=JudgmentStatus.QUEUED).update(
        updated_at=timezone.now()
    )
    return stale


def judgments_resend_lost() -> list[int]:
    """Send again the queued judgments whose messages may be lost: all of them at
    once when the broker came back without its messages (common/broker.py),
    otherwise those queued past JUDGE_RESEND_QUEUED_SECONDS. Run by the reaper
    and by each judge worker when it (re)connects to the broker.

    After a loss, the broker is marked as restored only once every queued
    judgment's message went out: a process that dies half-way (or a send that
    fails, which raises here) leaves it unmarked, and the next look sends again."""
    broker = settings.CELERY_BROKER_URL
    if not (broker and broker_memory_lost(broker)):
        return judgments_resend_queued()
    logger.warning("the broker came back without its messages: sending queued judgments")
    lost_before = timezone.now()
    sent: list[int] = []
    while True:
        with transaction.atomic():
            batch = _judgments_queued_stamp(lost_before)
        if not batch:
            break
        _send(batch)  # raises when the broker is away again: not marked restored
        sent += batch
    broker_memory_restored(broker)
    logger.warning("sent %d queued judgment(s) again", len(sent))
    return sent


def judgments_reap_stuck(*, older_than: float | None = None) -> list[int]:
    """Requeue judgments `running` whose worker has been silent for `older_than`
    seconds (JUDGE_LEASE_STALE_SECONDS): it was killed half-way, and its run can
    no longer finish. A live run's worker writes its heartbeat (judging/
    heartbeat.py), so it is never taken from it. Returns the ids requeued; their
    messages go out after commit."""
    seconds = settings.JUDGE_LEASE_STALE_SECONDS if older_than is None else older_than
    with transaction.atomic():
        requeued = lease_reap(
            Judgment.objects.all(),
            lease=JUDGMENT_LEASE,
            stale_seconds=seconds,
            status=JudgmentStatus.QUEUED,
            started_at=None,
            heartbeat_at=None,
            error="requeued: its worker stopped before finishing",
            updated_at=timezone.now(),
        )
        judgments_enqueue_on_commit(requeued)
    if requeued:
        logger.warning("requeued %d stuck judgment(s): %s", len(requeued), requeued)
    return requeued


# ---------------------------------------------------------------- panels


class PanelError(ValidationFailed):
    default_code = "invalid_panel"


def panel_create(*, name: str, judges: Iterable[str], description: str = "") -> JudgePanel:
    """A new panel of the named judges (fixed from now on: a different set of
    judges is a different panel, so a board's scores never move under a name)."""
    from django.core.exceptions import ValidationError

    names = list(dict.fromkeys(judges))
    if not names:
        raise PanelError("a panel needs at least one judge (--judge NAME)", field="judge")
    found = list(Judge.objects.filter(name__in=names))
    unknown = sorted(set(names) - {judge.name for judge in found})
    if unknown:
        raise PanelError(f"no judge named {', '.join(unknown)}", field="judge")
    panel = JudgePanel(name=name, description=description)
    try:
        panel.full_clean()
    except ValidationError as exc:
        raise PanelError(
            "; ".join(f"{key}: {' '.join(msgs)}" for key, msgs in exc.message_dict.items())
        ) from exc
    with transaction.atomic():
        panel.save()
        panel.judges.set(found)
    return panel


def panel_default_set(*, name: str, stages: Iterable[str] | None = None) -> list[StagePanel]:
    """Make `name` the default panel of `stages` (None: every judged stage)."""
    panel = JudgePanel.objects.filter(name=name).first()
    if panel is None:
        raise PanelError(f"no panel named {name!r}", field="panel")
    chosen = list(stages) if stages is not None else list(DEFAULT_RUBRICS)
    unknown = [stage for stage in chosen if stage not in DEFAULT_RUBRICS]
    if unknown:
        raise PanelError(f"no judged stage {', '.join(unknown)}", field="stage")
    with transaction.atomic():
        defaults = [
            StagePanel.objects.update_or_create(stage=stage, defaults={"panel": panel})[0]
            for stage in chosen
        ]
        # The judges those stages' boards average.
        results_changed(chosen, agreement=True)
    return defaults


def panel_published_ensure(*, name: str, judge_names: Iterable[str]) -> JudgePanel | None:
    """The import's panel of the published judges (those of `judge_names` that
    exist), made the default of every judged stage that has none. An existing
    panel of that name is left as it is. Returns the panel when this call made
    it or made it a stage's default, else None."""
    panel = JudgePanel.objects.filter(name=name).first()
    changed = panel is None
    if panel is None:
        judges = list(Judge.objects.filter(name__in=list(judge_names)))
        if not judges:
            return None
        panel = panel_create(
            name=name,
            judges=[judge.name for judge in judges],
            description="MLR-Bench's published judges (MLR-Judge), as imported.",
        )
    taken = set(StagePanel.objects.values_list("stage", flat=True))
    free = [stage for stage in DEFAULT_RUBRICS if stage not in taken]
    StagePanel.objects.bulk_create(
        [StagePanel(stage=stage, panel=panel) for stage in free], ignore_conflicts=True
    )
    results_changed(free, agreement=True)
    return panel if changed or free else None
