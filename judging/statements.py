"""The statements every judgment runs, written as SQL.

A judge run is a few milliseconds of work around a call that waits seconds, and
a worker keeps dozens in flight: on a small machine the queue's throughput is
bound by the CPU each judgment costs. Building an ORM query costs 0.3 to 2.5 ms
of CPU against about 0.1 ms for the same statement as SQL, so the statements
that run once per judgment (the claim, what the prompt reads, the result, the
submission's lock and its judging state) are here, measured by
`perf/judge_throughput.py`. Everything else uses
the ORM. Table and column names come from the models, values go through the
fields' own conversion, rows come back as model instances (`Model.from_db`,
`raw()`: a column not read is a deferred field, loaded if something asks for
it), and every statement runs on PostgreSQL and on SQLite (3.35+, for
RETURNING), the quick start's database.
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from benchmark.models import Artifact, Submission, Task
from experiments.models import ExperimentPhase, ExperimentRun
from experiments.selectors import REPRODUCTION_FINISHED

from .models import DimensionScore, Judge, JudgingCondition, Judgment, JudgmentStatus


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _column(model, name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _value(model, name: str, value):
    return model._meta.get_field(name).get_db_prep_value(value, connection)


def _instance(model, **values):
    """A model instance from some of its columns; the others are deferred."""
    # from_db takes the values in the order of the model's fields.
    names = [f.attname for f in model._meta.concrete_fields if f.attname in values]
    return model.from_db(connection.alias, names, [values[name] for name in names])


@dataclass(frozen=True)
class Claimed:
    submission_id: int
    judge_id: int
    rubric_id: int
    condition: str


def judgment_claim(*, judgment_id: int, token: uuid.UUID, now: datetime) -> Claimed | None:
    """queued -> running, stamped with the run's token, in one conditional update
    that also returns what the run loads next. None when the judgment was not
    queued (another delivery has it, it is finished, or it is gone)."""
    J = Judgment
    params = [
        JudgmentStatus.RUNNING.value,
        _value(J, "run_token", token),
        _value(J, "started_at", now),
        _value(J, "updated_at", now),
        judgment_id,
        JudgmentStatus.QUEUED.value,
    ]
    with connection.cursor() as cursor:
        cursor.execute(_claim_sql(connection.vendor), params)
        row = cursor.fetchone()
    return Claimed(*row) if row else None


@dataclass(frozen=True)
class RunInputs:
    judge: Judge
    submission: Submission  # with its stage and its task's description
    has_reproduction: bool  # a finished reproduction run exists for the prompt to show


def run_inputs(*, judge_id: int, submission_id: int) -> RunInputs:
    """What a judge run reads before it builds its prompt, in one statement: the
    judge's row as it is now (an organiser may have changed its limit), the
    submission's stage, its task's description, and whether the site has re-run
    its code (else the prompt need not look for the re-run)."""
    params = [
        ExperimentPhase.REPRO.value,
        *[status.value for status in REPRODUCTION_FINISHED],
        judge_id,
        submission_id,
    ]
    rows = list(Judge.objects.raw(_run_inputs_sql(connection.vendor), params))
    if not rows:
        raise Submission.DoesNotExist(
            f"judge {judge_id} or submission {submission_id} does not exist"
        )
    judge = rows[0]
    submission = _instance(
        Submission, id=submission_id, stage=judge.submission_stage, task_id=judge.task_pk
    )
    submission.task = _instance(Task, id=judge.task_pk, description=judge.task_description)
    return RunInputs(
        judge=judge, submission=submission, has_reproduction=bool(judge.has_reproduction)
    )


def artifacts_for_prompt(*, submission_id: int) -> list[Artifact]:
    """The submission's artifacts in path order."""
    return list(Artifact.objects.raw(_artifacts_sql(connection.vendor), [submission_id]))


def judgment_update_owned(*, judgment_id: int, token: uuid.UUID, **values) -> bool:
    """Set fields of a judgment that is still this run's (running, with the run's
    token); False, changing nothing, when it is not (it was given up for dead)."""
    names = tuple(sorted(values))
    params = [
        Judgment._meta.get_field(name).get_db_prep_save(values[name], connection) for name in names
    ]
    params += [judgment_id, JudgmentStatus.RUNNING.value, _value(Judgment, "run_token", token)]
    with connection.cursor() as cursor:
        cursor.execute(_update_owned_sql(connection.vendor, names), params)
        return cursor.rowcount > 0


def scores_insert(*, judgment_id: int, scores: list[tuple[str, object, int, int, str]]) -> None:
    """Insert a judgment's dimension scores: (dimension, score, min, max, justification)."""
    if not scores:
        return
    score = DimensionScore._meta.get_field("score")
    params: list = []
    for dimension, value, scale_min, scale_max, justification in scores:
        params += [
            judgment_id,
            dimension,
            score.get_db_prep_save(value, connection),
            scale_min,
            scale_max,
            justification,
        ]
    with connection.cursor() as cursor:
        cursor.execute(_scores_sql(connection.vendor, len(scores)), params)


def submission_status_lock(*, submission_id: int) -> str | None:
    """The submission's status, its row locked until the transaction ends (SQLite
    locks the whole database for a writing transaction instead)."""
    with connection.cursor() as cursor:
        cursor.execute(_lock_sql(connection.vendor), [submission_id])
        row = cursor.fetchone()
    return row[0] if row else None


def judging_state(*, submission_id: int) -> list[tuple[int, bool, str | None]]:
    """(judge id, judge is active, status of its judgment with code or None) for
    every active judge and every judge with such a judgment of the submission."""
    with connection.cursor() as cursor:
        cursor.execute(
            _state_sql(connection.vendor), [submission_id, JudgingCondition.WITH_CODE.value, True]
        )
        return [(judge_id, bool(active), status) for judge_id, active, status in cursor.fetchall()]


# The statements' texts: identifiers only (quoted, from the models), built once per
# database vendor; every value is a parameter.
@functools.cache
def _claim_sql(vendor: str) -> str:
    J = Judgment
    c = functools.partial(_column, J)
    return (
        f"UPDATE {_table(J)} SET {c('status')} = %s, {c('run_token')} = %s, "  # noqa: S608
        f"{c('started_at')} = %s, {c('finished_at')} = NULL, {c('attempts')} = 1, "
        f"{c('error')} = '', {c('updated_at')} = %s "
        f"WHERE {c('id')} = %s AND {c('status')} = %s "
        f"RETURNING {c('submission')}, {c('judge')}, {c('rubric')}, {c('condition')}"
    )


@functools.cache
def _run_inputs_sql(vendor: str) -> str:
    s = functools.partial(_column, Submission)
    t = functools.partial(_column, Task)
    r = functools.partial(_column, ExperimentRun)
    return (
        f"SELECT jd.*, s.{s('stage')} AS submission_stage, t.{t('id')} AS task_pk, "  # noqa: S608
        f"t.{t('description')} AS task_description, EXISTS (SELECT 1 FROM "
        f"{_table(ExperimentRun)} r WHERE r.{r('submission')} = s.{s('id')} "
        f"AND r.{r('phase')} = %s AND r.{r('status')} IN (%s, %s, %s)) AS has_reproduction "
        f"FROM {_table(Judge)} jd, {_table(Submission)} s "
        f"JOIN {_table(Task)} t ON t.{t('id')} = s.{s('task')} "
        f"WHERE jd.{_column(Judge, 'id')} = %s AND s.{s('id')} = %s"
    )


@functools.cache
def _artifacts_sql(vendor: str) -> str:
    a = functools.partial(_column, Artifact)
    return (
        f"SELECT * FROM {_table(Artifact)} WHERE {a('submission')} = %s "  # noqa: S608
        f"ORDER BY {a('path')}"
    )


@functools.cache
def _update_owned_sql(vendor: str, names: tuple[str, ...]) -> str:
    c = functools.partial(_column, Judgment)
    assignments = ", ".join(f"{c(name)} = %s" for name in names)
    return (
        f"UPDATE {_table(Judgment)} SET {assignments} "  # noqa: S608
        f"WHERE {c('id')} = %s AND {c('status')} = %s AND {c('run_token')} = %s"
    )


@functools.cache
def _scores_sql(vendor: str, rows: int) -> str:
    c = functools.partial(_column, DimensionScore)
    columns = ", ".join(
        c(name)
        for name in ("judgment", "dimension", "score", "scale_min", "scale_max", "justification")
    )
    values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * rows)
    return f"INSERT INTO {_table(DimensionScore)} ({columns}) VALUES {values}"  # noqa: S608


@functools.cache
def _lock_sql(vendor: str) -> str:
    lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
    return (
        f"SELECT {_column(Submission, 'status')} FROM {_table(Submission)} "  # noqa: S608
        f"WHERE {_column(Submission, 'id')} = %s{lock}"
    )


@functools.cache
def _state_sql(vendor: str) -> str:
    jd = functools.partial(_column, Judge)
    jm = functools.partial(_column, Judgment)
    return (
        f"SELECT jd.{jd('id')}, jd.{jd('is_active')}, jm.{jm('status')} "  # noqa: S608
        f"FROM {_table(Judge)} jd LEFT JOIN {_table(Judgment)} jm "
        f"ON jm.{jm('judge')} = jd.{jd('id')} "
        f"AND jm.{jm('submission')} = %s AND jm.{jm('condition')} = %s "
        f"WHERE jd.{jd('is_active')} = %s OR jm.{jm('id')} IS NOT NULL"
    )
