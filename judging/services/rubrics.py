"""Rubrics: the project's defaults, imported versions, the current version of a
stage, and each process's cache of the rows it has read."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Max

from common.errors import ValidationFailed
from common.results import results_changed

from ..models import JudgmentKind, Rubric
from ..rubrics import DEFAULT_RUBRICS, HALLUCINATION_STAGES, hallucination_prompt


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
    if rubric_model is None:  # a migration's historical rows are no one's news
        results_changed(rubric.stage for rubric in created)
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
            results_changed([stage])
        return existing, False
    same_kind = Rubric.objects.filter(stage=stage, kind=kind)
    shape = _rubric_shape(stage, kind, dimensions, base=same_kind.order_by("-version").first())
    for _ in range(3):  # two imports at once: the loser takes the next number
        version = (same_kind.aggregate(v=Max("version"))["v"] or 0) + 1
        try:
            with transaction.atomic():
                rubric = Rubric.objects.create(
                    stage=stage,
                    kind=kind,
                    version=version,
                    **shape,
                    prompt=prompt,
                    source=source[:300],
                    is_active=activate,
                )
            results_changed([stage])
            return rubric, True
        except IntegrityError:
            continue
    raise RubricError("could not pick a version number; try again")


def _rubric_shape(
    stage: str, kind: str, dimensions: list[dict[str, Any]] | None, *, base: Rubric | None
) -> dict[str, Any]:
    """A new version's dimensions, overall key and extra fields: those given, else
    the newest version's of its kind (`base`), else the stage's defaults (a
    hallucination rubric has none)."""
    spec = DEFAULT_RUBRICS[stage]
    scoring = kind == JudgmentKind.SCORE
    return {
        "dimensions": (
            dimensions
            if dimensions is not None
            else base.dimensions
            if base
            else spec.dimension_data
            if scoring
            else []
        ),
        "overall_key": (
            "Overall"
            if scoring and (dimensions is None or any(d["key"] == "Overall" for d in dimensions))
            else ""
        ),
        "extra_fields": (
            []
            if dimensions is not None
            else base.extra_fields
            if base
            else list(spec.extra_fields)
            if scoring
            else []
        ),
    }


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
