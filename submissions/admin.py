from django.contrib import admin

from benchmark.models import ModelPrice
from common.results_admin import ResultsAdminMixin

from .costs import submissions_reprice
from .models import Artifact, Submission
from .states import (
    STATE,
    submission_state,
    submission_state_choices,
    submission_state_label,
    submissions_with_state,
)

# Organisers look into submissions here; uploads themselves go through the intake.
_ARTIFACT_FIELDS = ("path", "kind", "size", "sha256")


class ArtifactInline(admin.TabularInline):
    model = Artifact
    fields = _ARTIFACT_FIELDS
    readonly_fields = _ARTIFACT_FIELDS
    extra = 0
    can_delete = False
    show_change_link = False


class SubmissionStateFilter(admin.SimpleListFilter):
    """By state: the intake status, or judging and judged (derived from the judgments)."""

    title = "state"
    parameter_name = STATE

    def lookups(self, request, model_admin):
        return submission_state_choices()

    def queryset(self, request, queryset):
        return queryset.filter(**{STATE: self.value()}) if self.value() else queryset


@admin.register(Submission)
class SubmissionAdmin(ResultsAdminMixin, admin.ModelAdmin):
    list_display = ["id", "agent", "task", "stage", "version", "state", "source", "created_at"]
    list_filter = ["stage", SubmissionStateFilter, "source"]
    search_fields = ["agent__name", "task__slug", "archive_sha256"]
    readonly_fields = ["archive_sha256", "version", "source", "uploader", "created_at"]
    inlines = [ArtifactInline]

    def get_queryset(self, request):
        return submissions_with_state(super().get_queryset(request))

    @admin.display(description="state", ordering=STATE)
    def state(self, submission: Submission) -> str:
        return submission_state_label(submission_state(submission))


# The organisers' prices (a benchmark table) are edited here: saving one prices
# again the submissions' stored steps.
@admin.register(ModelPrice)
class ModelPriceAdmin(ResultsAdminMixin, admin.ModelAdmin):
    """Prices for models litellm's table does not list; saving one prices
    again the stored runs that had steps without a price."""

    list_display = [
        "model",
        "input_usd_per_mtok",
        "output_usd_per_mtok",
        "cache_write_usd_per_mtok",
        "cache_read_usd_per_mtok",
        "source",
        "as_of",
    ]
    search_fields = ["model", "source"]

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        changed = submissions_reprice()
        self.message_user(request, f"{changed} submission(s) priced again.")
