"""Organiser tools in the admin. The admin is for staff only (Django refuses
everyone else), so reviewers, who are not staff, never reach these lists."""

from django import forms
from django.contrib import admin

from benchmark.models import Topic
from common.results_admin import ResultsAdminMixin

from . import services
from .models import (
    Assignment,
    HumanReview,
    HumanReviewScore,
    ReviewerProfile,
    ReviewRevision,
    ReviewRound,
)


class ReviewerProfileForm(forms.ModelForm):
    # The nine topics as boxes to tick: a JSON text box took a label where a key belongs.
    expertise = forms.MultipleChoiceField(
        choices=Topic.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Papers of these topics are offered to this reviewer first.",
    )

    class Meta:
        model = ReviewerProfile
        fields = ["user", "affiliation", "expertise", "max_load", "is_placeholder"]


@admin.register(ReviewerProfile)
class ReviewerProfileAdmin(ResultsAdminMixin, admin.ModelAdmin):
    form = ReviewerProfileForm
    list_display = ["user", "affiliation", "expertise_labels", "max_load", "is_placeholder"]
    list_filter = ["is_placeholder"]
    search_fields = ["user__username", "user__email", "affiliation"]

    @admin.display(description="Expertise")
    def expertise_labels(self, profile: ReviewerProfile) -> str:
        labels = dict(Topic.choices)
        return ", ".join(labels.get(topic, topic) for topic in profile.expertise or []) or "—"


class AssignmentInline(admin.TabularInline):
    model = Assignment
    extra = 0
    fields = ["code", "reviewer", "submission", "due_at", "status", "closed_at"]
    readonly_fields = ["code", "status"]
    raw_id_fields = ["reviewer", "submission"]


@admin.register(ReviewRound)
class ReviewRoundAdmin(ResultsAdminMixin, admin.ModelAdmin):
    # Its rows are agreement inputs.
    results_agreement = True
    list_display = ["name", "stage", "reviewers_per_paper", "due_at", "closed_at", "released_at"]
    list_filter = ["stage"]
    filter_horizontal = ["submissions"]
    inlines = [AssignmentInline]
    # Releasing goes through the service, which closes the round first.
    readonly_fields = ["released_at"]
    actions = ["release_rounds"]

    @admin.action(description="Release the reviews of the selected rounds (closes them)")
    def release_rounds(self, request, queryset) -> None:
        for review_round in queryset:
            services.review_round_release(review_round=review_round)
        self.message_user(request, f"{queryset.count()} round(s) released.")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["code", "reviewer", "submission", "due_at", "status", "closed_at"]
    list_filter = ["status", "review_round"]
    search_fields = ["code", "reviewer__username"]
    raw_id_fields = ["reviewer", "submission", "review_round"]


class HumanReviewScoreInline(admin.TabularInline):
    model = HumanReviewScore
    extra = 0


class ReviewRevisionInline(admin.TabularInline):
    model = ReviewRevision
    extra = 0
    can_delete = False
    readonly_fields = [
        "number",
        "scores",
        "confidence",
        "strengths",
        "weaknesses",
        "comments",
        "created_at",
    ]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(HumanReview)
class HumanReviewAdmin(ResultsAdminMixin, admin.ModelAdmin):
    # Its rows are agreement inputs.
    results_agreement = True
    list_display = ["submission", "reviewer", "status", "imported", "submitted_at"]
    list_filter = ["status", "imported", "submission__stage"]
    search_fields = ["reviewer__username", "submission__agent__name", "submission__task__slug"]
    raw_id_fields = ["submission", "reviewer", "assignment"]
    readonly_fields = ["draft", "draft_saved_at", "created_at", "updated_at"]
    inlines = [HumanReviewScoreInline, ReviewRevisionInline]
