from django.contrib import admin, messages
from django.db.models import Count, Q, Sum

from common.results import results_changed
from common.results_admin import ResultsAdminMixin

from .models import (
    Canary,
    DimensionScore,
    Judge,
    JudgePanel,
    Judgment,
    JudgmentStatus,
    Rubric,
    StagePanel,
)
from .services.panels import panel_create, panel_default_set
from .services.queue import judgment_rerun


@admin.register(Rubric)
class RubricAdmin(ResultsAdminMixin, admin.ModelAdmin):
    list_display = ("stage", "version", "is_active", "source", "created_at")
    list_filter = ("stage", "is_active")
    readonly_fields = ("created_at",)
    # A version's content is what its judgments were scored against: a new text is
    # a new version (`manage.py import_rubric`), so only the flag and the note change.
    version_content = ("stage", "version", "dimensions", "overall_key", "extra_fields", "prompt")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return self.readonly_fields
        return (*self.readonly_fields, *self.version_content)


@admin.register(Judge)
class JudgeAdmin(ResultsAdminMixin, admin.ModelAdmin):
    list_display = (
        "name",
        "model",
        "model_family",
        "requests_per_minute",
        "is_active",
        "done_count",
        "failed_count",
        "cost",
    )
    list_filter = ("is_active", "model_family")
    search_fields = ("name", "model")
    actions = ("activate", "deactivate")
    fieldsets = (
        (None, {"fields": ("name", "model", "model_family", "is_active")}),
        (
            "Connection",
            {
                "fields": ("api_base", "api_key_env", "timeout_seconds", "requests_per_minute"),
                "description": "The key itself is never stored: name the environment "
                "variable that holds it in the workers' environment.",
            },
        ),
        ("Sampling", {"fields": ("temperature", "max_tokens")}),
        (
            "Price",
            {
                "fields": ("input_usd_per_mtok", "output_usd_per_mtok"),
                "description": "Only for a model litellm's price table lacks (a self-hosted "
                "server, a model newer than the table): both, in USD per million tokens. "
                "Empty: the table's price, and a model it does not list costs unknown.",
            },
        ),
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                done=Count("judgments", filter=Q(judgments__status=JudgmentStatus.DONE)),
                failed=Count("judgments", filter=Q(judgments__status=JudgmentStatus.FAILED)),
                total_cost=Sum("judgments__cost_usd"),
            )
        )

    @admin.display(ordering="done", description="done")
    def done_count(self, judge):
        return judge.done

    @admin.display(ordering="failed", description="failed")
    def failed_count(self, judge):
        return judge.failed

    @admin.display(ordering="total_cost", description="cost (USD)")
    def cost(self, judge):
        return judge.total_cost

    @admin.action(description="Activate: queue for new submissions")
    def activate(self, request, queryset):
        queryset.update(is_active=True)
        results_changed(None)  # no model signal: the judging states on every stage

    @admin.action(description="Deactivate: no new judgments")
    def deactivate(self, request, queryset):
        queryset.update(is_active=False)
        results_changed(None)


class DimensionScoreInline(admin.TabularInline):
    model = DimensionScore
    extra = 0
    can_delete = False
    fields = ("dimension", "score", "scale_min", "scale_max", "justification")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Judgment)
class JudgmentAdmin(ResultsAdminMixin, admin.ModelAdmin):
    # Its rows are agreement inputs.
    results_agreement = True
    list_display = (
        "id",
        "submission",
        "judge",
        "condition",
        "status",
        "attempts",
        "cost_usd",
        "imported",
        "finished_at",
    )
    list_filter = ("status", "condition", "imported", "judge", "submission__stage")
    search_fields = ("submission__agent__name", "submission__task__slug", "judge__name")
    list_select_related = ("submission__agent", "submission__task", "judge")
    inlines = [DimensionScoreInline]
    actions = ("rerun_failed",)
    # Results are written by the judge runs and the import, never by hand.
    readonly_fields = [field.name for field in Judgment._meta.fields]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Re-run the selected failed judgments")
    def rerun_failed(self, request, queryset):
        rerun = 0
        for judgment in queryset.filter(status=JudgmentStatus.FAILED):
            judgment_rerun(judgment_id=judgment.pk)
            rerun += 1
        self.message_user(request, f"{rerun} judgment(s) queued again", messages.SUCCESS)


@admin.register(Canary)
class CanaryAdmin(ResultsAdminMixin, admin.ModelAdmin):
    """The planted fabrications and their ground truth (staff only, as their
    submissions' pages are); made by `manage.py judge_canaries create`."""

    list_display = ("id", "role", "kind", "source", "submission", "seed", "path", "created_at")
    list_filter = ("role", "kind", "submission__stage")
    raw_id_fields = ("source", "submission")
    # The ground truth is what the judges are scored against: never edited by hand.
    readonly_fields = tuple(f.name for f in Canary._meta.fields)

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(JudgePanel)
class JudgePanelAdmin(admin.ModelAdmin):
    """An organiser makes a panel here as `judges panel create` does; its judges
    are fixed once made (a published score never moves under a name), so only the
    description changes afterwards."""

    list_display = ("name", "judge_names", "created_at")
    search_fields = ("name",)
    fields = ("name", "judges", "description", "created_at")
    readonly_fields = ("created_at",)

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return self.readonly_fields
        return (*self.readonly_fields, "name", "judges")

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="judges")
    def judge_names(self, panel: JudgePanel) -> str:
        return ", ".join(judge.name for judge in panel.judges.all())

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("judges")

    def save_model(self, request, obj, form, change):
        if change:
            super().save_model(request, obj, form, change)
            return
        panel = panel_create(
            name=form.cleaned_data["name"],
            judges=[judge.name for judge in form.cleaned_data["judges"]],
            description=form.cleaned_data["description"],
        )
        obj.pk, obj.created_at = panel.pk, panel.created_at
        obj._state.adding = False

    def save_related(self, request, form, formsets, change):
        # The service set the judges; a saved panel's judges never change.
        return


@admin.register(StagePanel)
class StagePanelAdmin(admin.ModelAdmin):
    """Which panel each stage's boards use (`judges panel default`)."""

    list_display = ("stage", "panel")

    def has_delete_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        panel_default_set(name=obj.panel.name, stages=[obj.stage])
        saved = StagePanel.objects.get(stage=obj.stage)
        obj.pk = saved.pk
        obj._state.adding = False
