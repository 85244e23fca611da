"""Admin edits say what they changed, as the services do.

The organisers' admin writes rows the public results read (a task, an agent, a
submission, a rubric, a judge, a review) without a service: `ResultsAdminMixin`,
mixed into those apps' `ModelAdmin`s, calls `common.results.results_changed`
for the stages of the rows it saved (with their inlines) or deleted, one by one
or in bulk. No model signal is involved, so Django's fast deletes stay on for
every model (a `post_delete` receiver of every model turned them off: deleting
a judgment's scores loaded each row and ran a query per row).

A row's stages are read from the database before the write and after it, by
the first path the model has: its own `stage`, its submission's, its
judgment's submission's, its review's submission's; a row of none (a task, an
agent, a judge) changes every stage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import FieldError
from django.db.models import Model, QuerySet

from .results import results_changed

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin
    from django.forms import ModelForm
    from django.http import HttpRequest

    _Base = ModelAdmin[Any]
else:
    _Base = object

STAGE_PATHS = (
    "stage",
    "submission__stage",
    "judgment__submission__stage",
    "review__submission__stage",
)


def rows_stages(rows: QuerySet[Any]) -> set[str] | None:
    """The stages whose results `rows` belong to; None: every stage (a row
    that names no stage, or a row whose stage cannot be read any more)."""
    for path in STAGE_PATHS:
        try:
            stages = rows.values_list(path, flat=True).order_by().distinct()
        except FieldError:
            continue
        found = set(stages)
        return None if None in found else found
    return None


def _union(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    return None if a is None or b is None else a | b


class ResultsAdminMixin(_Base):
    """Announce the admin's saves and deletes (see the module docstring).
    `results_agreement`: the model's rows are agreement inputs (judgments and
    their scores, human reviews and their scores, review rounds)."""

    results_agreement = False

    def _results_rows(self, obj: Model) -> QuerySet[Any]:
        return type(obj)._default_manager.filter(pk=obj.pk)

    def _results_announce(self, stages: set[str] | None) -> None:
        results_changed(stages, agreement=self.results_agreement)

    def save_model(
        self, request: HttpRequest, obj: Any, form: ModelForm[Any], change: bool
    ) -> None:
        # A row moved to another stage changes the results of the one it left too.
        obj._results_stages_before = rows_stages(self._results_rows(obj)) if change else set()
        super().save_model(request, obj, form, change)

    def save_related(
        self, request: HttpRequest, form: ModelForm[Any], formsets: Any, change: bool
    ) -> None:
        super().save_related(request, form, formsets, change)
        obj = form.instance
        before: set[str] | None = getattr(obj, "_results_stages_before", set())
        self._results_announce(_union(before, rows_stages(self._results_rows(obj))))

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        stages = rows_stages(self._results_rows(obj))
        super().delete_model(request, obj)
        self._results_announce(stages)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        stages = rows_stages(queryset)
        super().delete_queryset(request, queryset)
        self._results_announce(stages)
