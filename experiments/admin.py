"""Organiser tools for experiment runs: cancel and re-run, objective tasks."""

from django.contrib import admin, messages

from experiments.models import ExperimentRun, ObjectiveResult, ObjectiveTask, ReproductionCheck

from .errors import ExperimentRefused
from .queue import experiment_cancel, experiment_rerun


class ReproductionCheckInline(admin.StackedInline):
    model = ReproductionCheck
    extra = 0
    can_delete = False
    readonly_fields = ["verdict", "summary", "evidence", "tolerance", "created_at"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ExperimentRun)
class ExperimentRunAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "submission",
        "phase",
        "status",
        "limit_hit",
        "score",
        "worker_host",
        "created_at",
        "finished_at",
    ]
    list_filter = ["phase", "status", "limit_hit"]
    search_fields = ["submission__agent__name", "submission__task__slug", "command"]
    list_select_related = ["submission__agent", "submission__task"]
    readonly_fields = [field.name for field in ExperimentRun._meta.fields]
    inlines = [ReproductionCheckInline]
    actions = ["cancel_runs", "rerun_runs"]

    def has_add_permission(self, request) -> bool:
        return False  # runs are queued with run_experiment or the services

    @admin.action(description="Cancel the selected runs (a running one is killed)")
    def cancel_runs(self, request, queryset):
        for run in queryset:
            try:
                experiment_cancel(run=run)
            except ExperimentRefused as exc:
                self.message_user(request, str(exc), messages.WARNING)
            else:
                self.message_user(request, f"run {run.pk}: cancelled", messages.SUCCESS)

    @admin.action(description="Re-run the selected runs (finished ones)")
    def rerun_runs(self, request, queryset):
        for run in queryset:
            try:
                new = experiment_rerun(run=run, requested_by=request.user)
            except ExperimentRefused as exc:
                self.message_user(request, str(exc), messages.WARNING)
            else:
                self.message_user(
                    request, f"run {run.pk}: queued again as run {new.pk}", messages.SUCCESS
                )


@admin.register(ObjectiveTask)
class ObjectiveTaskAdmin(admin.ModelAdmin):
    list_display = ["task", "metric", "higher_is_better", "baseline_score", "human_score"]
    search_fields = ["task__slug", "metric"]
    raw_id_fields = ["task"]


@admin.register(ObjectiveResult)
class ObjectiveResultAdmin(admin.ModelAdmin):
    list_display = ["agent", "objective", "test_score", "relative_improvement", "lloc"]
    list_filter = ["objective"]
    readonly_fields = [field.name for field in ObjectiveResult._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
