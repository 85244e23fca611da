"""Lineage: which submissions of earlier stages a submission was built on.

The stages chain idea -> proposal -> experiment -> paper. A submission of one
of them may be based on submissions of the same task and of earlier stages (a
paper on an experiment, an experiment on a proposal and its idea). An
end-to-end run makes every stage itself from the task, and a method answers
an objective task: they are based on nothing, and no stage is based on them.

An uploader names inputs by id (`based_on` in the API, the intake's keyword
argument, or `based_on.json` in the archive: a JSON list of ids such as
`[12, 40]`). A stepwise agent samples them (`stage_inputs_sample`): seeded,
so the same seed picks the same inputs whatever order the rows come in.
"""

import json
import random
from collections.abc import Sequence
from pathlib import Path

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from benchmark.models import Agent, Task
from common.errors import ValidationFailed

from .models import Stage, Submission, SubmissionInput, SubmissionStatus
from .selectors import submissions_newest
from .visibility import hidden_submission_ids

STAGE_CHAIN: tuple[str, ...] = (Stage.IDEA, Stage.PROPOSAL, Stage.EXPERIMENT, Stage.PAPER)
BASED_ON_FILE = "based_on.json"
MAX_BASED_ON = 20
MAX_BASED_ON_FILE_BYTES = 16 * 1024
FIELD = "based_on"


class LineageRefused(ValidationFailed):
    """The inputs named or asked for cannot be the submission's inputs."""

    default_code = "invalid_based_on"

    def __init__(self, message: str, *, code: str | None = None, field: str = FIELD):
        super().__init__(message, code=code, field=field)


def earlier_stages(stage: str) -> tuple[str, ...]:
    """The stages a submission of `stage` may be based on (none for end2end)."""
    if stage not in STAGE_CHAIN:
        return ()
    return STAGE_CHAIN[: STAGE_CHAIN.index(stage)]


def previous_stage(stage: str) -> str | None:
    """The stage right before `stage` in the chain, whose outputs a stepwise
    agent takes as inputs (None for idea, end2end and method)."""
    earlier = earlier_stages(stage)
    return earlier[-1] if earlier else None


def _stage_label(stage: str) -> str:
    return Stage(stage).label.lower() if stage in Stage.values else stage


def based_on_ids_parse(raw: object, *, field: str = FIELD) -> list[int]:
    """A list of distinct submission ids, in order, from what a client sent."""
    if not isinstance(raw, list):
        raise LineageRefused(
            "based_on must be a list of submission ids, e.g. [12, 40]", field=field
        )
    if len(raw) > MAX_BASED_ON:
        raise LineageRefused(
            f"based_on names {len(raw)} submissions; at most {MAX_BASED_ON}", field=field
        )
    ids: list[int] = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise LineageRefused(
                f"based_on must hold submission ids (positive integers); got {value!r}",
                field=field,
            )
        if value in ids:
            raise LineageRefused(f"based_on names submission {value} twice", field=field)
        ids.append(value)
    return ids


def based_on_file_read(path: Path) -> list[int]:
    """The ids in an archive's `based_on.json`: a JSON list of ids, nothing else."""
    field = "archive"
    if path.stat().st_size > MAX_BASED_ON_FILE_BYTES:
        raise LineageRefused(
            f"{BASED_ON_FILE} is larger than {MAX_BASED_ON_FILE_BYTES // 1024} KiB", field=field
        )
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise LineageRefused(
            f"{BASED_ON_FILE} is not JSON; it must be a list of submission ids, e.g. [12, 40]",
            field=field,
        ) from None
    if not isinstance(raw, list):
        raise LineageRefused(
            f"{BASED_ON_FILE} must be a JSON list of submission ids, e.g. [12, 40]; "
            f"got a JSON {type(raw).__name__}",
            field=field,
        )
    return based_on_ids_parse(raw, field=field)


def _check_input(submission: Submission, *, task: Task, stage: str, allowed: tuple[str, ...]):
    if submission.task_id != task.pk:
        raise LineageRefused(
            f"submission {submission.pk} is for another task; inputs must be for {task.slug}",
            code="wrong_task",
        )
    if submission.stage not in allowed:
        raise LineageRefused(
            f"submission {submission.pk} is a {_stage_label(submission.stage)} submission; "
            f"a {_stage_label(stage)} submission may be based on "
            + (", ".join(_stage_label(s) for s in allowed) + " submissions"),
            code="wrong_stage",
        )
    if submission.status != SubmissionStatus.READY:
        raise LineageRefused(
            f"submission {submission.pk} is not ready ({submission.status})", code="not_ready"
        )


def stage_inputs_resolve(
    *,
    task: Task,
    stage: str,
    ids: Sequence[int],
    user: User | AnonymousUser | None = None,
) -> list[Submission]:
    """The submissions `ids` names, in that order, checked as inputs of a new
    `stage` submission for `task`: they exist, `user` may see them (None: the
    site itself, which sees all), same task, an earlier stage, intake done."""
    ids = based_on_ids_parse(list(ids))
    if not ids:
        return []
    allowed = earlier_stages(stage)
    if not allowed:
        raise LineageRefused(
            f"a {_stage_label(stage)} submission is based on no other submission "
            "(it starts from the task)",
            code="no_inputs_allowed",
        )
    found = Submission.objects.in_bulk(ids)
    hidden = hidden_submission_ids(user=user) if user is not None else frozenset()
    # A submission the user may not see is answered like one that does not exist.
    missing = [pk for pk in ids if pk not in found or pk in hidden]
    if missing:
        raise LineageRefused(
            "no submission " + ", ".join(str(pk) for pk in missing), code="does_not_exist"
        )
    inputs = [found[pk] for pk in ids]
    for submission in inputs:
        _check_input(submission, task=task, stage=stage, allowed=allowed)
    return inputs


def stage_input_candidates(
    *, task: Task, stage: str, exclude_agent: Agent | None = None
) -> QuerySet[Submission]:
    """What a stepwise agent may take as inputs for `stage`: the newest ready
    submission of each other agent for `task` at the stage before `stage`."""
    before = previous_stage(stage)
    if before is None:
        return Submission.objects.none()
    # Never a canary: a copy made to test the judges is no one's work to build on.
    candidates: QuerySet[Submission] = Submission.objects.public().filter(
        task=task, stage=before, status=SubmissionStatus.READY
    )
    candidates = submissions_newest(candidates)
    if exclude_agent is not None:
        candidates = candidates.exclude(agent=exclude_agent)
    return candidates


def stage_inputs_sample(
    *,
    task: Task,
    stage: str,
    seed: int,
    exclude_agent: Agent | None = None,
    count: int = 1,
) -> list[Submission]:
    """`count` inputs for a stepwise `stage` submission, drawn with `seed` from
    `stage_input_candidates`. The candidates are put in id order before the
    draw, so one seed gives the same picks whatever order the database returns."""
    if count < 1:
        raise LineageRefused(f"count must be at least 1; got {count}", field="count")
    before = previous_stage(stage)
    if before is None:
        raise LineageRefused(
            f"the {_stage_label(stage)} stage takes no inputs from an earlier stage",
            code="no_inputs_allowed",
            field="stage",
        )
    ids = sorted(
        stage_input_candidates(task=task, stage=stage, exclude_agent=exclude_agent).values_list(
            "id", flat=True
        )
    )
    if len(ids) < count:
        others = f" by agents other than {exclude_agent.name}" if exclude_agent else ""
        raise LineageRefused(
            f"task {task.slug} has {len(ids) or 'no'} ready {_stage_label(before)} "
            f"submission{'' if len(ids) == 1 else 's'}{others} to base a "
            f"{_stage_label(stage)} on; {count} needed",
            code="no_inputs",
            field="stage",
        )
    picked = random.Random(seed).sample(ids, count)  # noqa: S311 - reproducible draw, not secrecy
    found = Submission.objects.select_related("agent", "task").in_bulk(picked)
    return [found[pk] for pk in picked]


def _visible(rows: list[Submission], hidden: frozenset[int]) -> tuple[list[Submission], int]:
    shown = [row for row in rows if row.pk not in hidden]
    return shown, len(rows) - len(shown)


def submission_lineage(
    *,
    submission: Submission,
    user: User | AnonymousUser,
    hidden: frozenset[int] | None = None,
) -> dict:
    """What the submission page shows of its lineage: the inputs in order and
    the submissions built on it, leaving out (and only counting) those `user`
    may not see with their agent (a reviewer's blind tasks: `hidden`, when the
    page has read `hidden_submission_ids` for this request already)."""
    if hidden is None:
        hidden = hidden_submission_ids(user=user)
    # Both directions in one small query (a submission is never its own input);
    # most submissions have neither, and then nothing more is read.
    links = list(
        SubmissionInput.objects.filter(Q(submission=submission) | Q(based_on=submission))
        .order_by("position", "submission_id")
        .values_list("submission_id", "based_on_id")
    )
    inputs = [based_on for of, based_on in links if of == submission.pk]
    outputs = sorted(of for of, based_on in links if based_on == submission.pk)
    found = Submission.objects.select_related("agent").in_bulk([*inputs, *outputs]) if links else {}
    based_on, based_on_hidden = _visible([found[pk] for pk in inputs if pk in found], hidden)
    used_by, used_by_hidden = _visible([found[pk] for pk in outputs if pk in found], hidden)
    return {
        "based_on": based_on,
        "based_on_hidden": based_on_hidden,
        "used_by": used_by,
        "used_by_hidden": used_by_hidden,
    }
