"""Judge panels: the fixed sets of judges a stage's board averages."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from common.errors import ValidationFailed
from common.results import results_changed

from ..models import Judge, JudgePanel, StagePanel
from ..rubrics import DEFAULT_RUBRICS


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
        results_changed(None)  # a panel every stage's board can be asked for
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
