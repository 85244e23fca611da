"""Queueing judgments: creating and resetting them in a few statements per batch,
sending their messages after commit, re-runs, what a queueing would cost, and the
reaper's resends and requeues of work whose message or worker was lost."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from common.broker import broker_memory_forget, broker_memory_lost, broker_memory_restored
from common.errors import Conflict, NotFound
from common.leases import lease_reap
from common.results import results_changed
from common.tasks import run_soon
from submissions.models import Stage, Submission, SubmissionStatus

from ..models import (
    DimensionScore,
    HallucinationFinding,
    Judge,
    JudgingCondition,
    Judgment,
    JudgmentKind,
    JudgmentStatus,
    Rubric,
)
from ..rubrics import HALLUCINATION_STAGES
from .rubrics import judgment_kinds_all, rubric_current
from .run import JUDGMENT_LEASE

logger = logging.getLogger(__name__)


@dataclass
class QueueReport:
    created: int = 0
    requeued: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)
    judgment_ids: list[int] = field(default_factory=list)


def _send(judgment_ids: list[int]) -> None:
    """Send the judgments' messages now; raises what the broker raises."""
    from ..tasks import judgment_run_task

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
    before its commit.

    Long because one transaction creates, resets and sends the batch."""
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


# The reaper: work whose message or worker was lost.


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
