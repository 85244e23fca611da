"""API answers of human review: the agreement statistics, a reviewer's
assignments and a round's assignments. The field order is the answer's key order."""

from typing import Any

from django.urls import reverse
from rest_framework import serializers


def _figure() -> serializers.FloatField:
    return serializers.FloatField(allow_null=True)


def _interval() -> serializers.ListField:
    return serializers.ListField(
        child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True
    )


class DimensionAgreementSerializer(serializers.Serializer):
    """One `reviews.agreement.DimensionAgreement`: a figure is null below the
    minimum amount of data, and `unavailable` says why, by field name."""

    dimension = serializers.CharField()
    n_papers = serializers.IntegerField()
    n_reviews = serializers.IntegerField()
    n_papers_with_llm = serializers.IntegerField()
    n_human_human = serializers.IntegerField()
    n_human_llm = serializers.IntegerField()
    mean_abs_diff_human_human = _figure()
    median_abs_diff_human_human = _figure()
    mean_abs_diff_human_llm = _figure()
    median_abs_diff_human_llm = _figure()
    u_statistic = _figure()
    p_value = _figure()
    rank_biserial = _figure()
    krippendorff_alpha_humans = _figure()
    krippendorff_alpha_humans_llm = _figure()
    spearman_rho = _figure()
    spearman_p_value = _figure()
    n_papers_spearman = serializers.IntegerField()
    ci_mean_abs_diff_human_human = _interval()
    ci_mean_abs_diff_human_llm = _interval()
    ci_mean_abs_diff_difference = _interval()
    p_value_holm = _figure()
    unavailable = serializers.DictField(child=serializers.CharField())


class StageAgreementSerializer(serializers.Serializer):
    """A `reviews.selectors.StageAgreement` (without the dashboard's plot data)."""

    stage = serializers.CharField()
    judge = serializers.CharField(allow_null=True)
    reviews = serializers.ChoiceField(
        choices=["released", "submitted"],
        help_text="The human reviews counted: released ones (public), or every submitted one.",
    )
    dimensions = DimensionAgreementSerializer(many=True)


class TaskRefSerializer(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()


class ReviewSoFarSerializer(serializers.Serializer):
    """The reviewer's own review of the paper: the submitted fields and the draft."""

    status = serializers.CharField()
    scores = serializers.SerializerMethodField()
    confidence = serializers.IntegerField(allow_null=True)
    strengths = serializers.CharField()
    weaknesses = serializers.CharField()
    comments = serializers.CharField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    draft = serializers.JSONField()
    draft_saved_at = serializers.DateTimeField(allow_null=True)
    revisions = serializers.SerializerMethodField()

    def get_scores(self, review) -> dict[str, int]:
        return {s.dimension: s.score for s in review.scores.all()}

    def get_revisions(self, review) -> int:
        return review.revisions.count()


class OtherReviewSerializer(serializers.Serializer):
    reviewer = serializers.CharField(help_text="`Reviewer 1`, ...: never who wrote it")
    scores = serializers.DictField(child=serializers.IntegerField())


class RevealSerializer(serializers.Serializer):
    """What a reviewer who has submitted may see (`reviews.selectors.Reveal`)."""

    agent = serializers.CharField(source="agent_name")
    agent_display_name = serializers.CharField()
    team = serializers.CharField()
    base_model = serializers.CharField()
    llm_scores = serializers.DictField(child=serializers.FloatField())
    other_reviews = serializers.SerializerMethodField()

    def get_other_reviews(self, reveal) -> list[dict[str, Any]]:
        return list(
            OtherReviewSerializer(
                [{"reviewer": label, "scores": scores} for label, scores in reveal.other_reviews],
                many=True,
            ).data
        )


class BlindArtifactSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="the blind path")
    kind = serializers.CharField()
    size = serializers.IntegerField()
    url = serializers.SerializerMethodField()

    def get_url(self, artifact) -> str:
        return self.context["paper_url"] + artifact.path


class AssignmentSerializer(serializers.Serializer):
    """One of the reviewer's assignments (`reviews.selectors.AssignmentState`),
    blind: `revealed` is null until their review is submitted."""

    code = serializers.CharField(source="assignment.code")
    stage = serializers.CharField(source="assignment.review_round.stage")
    task = TaskRefSerializer(source="assignment.submission.task")
    due_at = serializers.DateTimeField(source="assignment.due_at")
    status = serializers.CharField(source="assignment.status")
    closed = serializers.BooleanField(source="assignment.is_closed")
    paper_url = serializers.SerializerMethodField()
    review = ReviewSoFarSerializer(allow_null=True)
    revealed = RevealSerializer(source="reveal", allow_null=True)

    def get_paper_url(self, state) -> str:
        return paper_url(self.context["request"], state.assignment.code)


class AssignmentDetailSerializer(AssignmentSerializer):
    """The assignment with the rubric and the paper's files (blind paths)."""

    rubric = serializers.ListField(child=serializers.DictField())
    artifacts = serializers.SerializerMethodField()

    def get_artifacts(self, state) -> list[dict[str, Any]]:
        url = paper_url(self.context["request"], state.assignment.code)
        serializer = BlindArtifactSerializer(state.artifacts, many=True, context={"paper_url": url})
        return list(serializer.data)


class AssignmentListSerializer(serializers.Serializer):
    results = AssignmentSerializer(many=True)


def paper_url(request, code: str) -> str:
    return request.build_absolute_uri(reverse("reviews:paper", kwargs={"code": code}))


class RoundRefSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    stage = serializers.CharField()
    reviewers_per_paper = serializers.IntegerField()
    due_at = serializers.DateTimeField(allow_null=True)
    closed = serializers.BooleanField(source="is_closed")


class RoundAssignmentSerializer(serializers.Serializer):
    """Who reviews what (organisers only: names the reviewer and the agent)."""

    code = serializers.CharField()
    reviewer = serializers.CharField(source="reviewer.username")
    submission = serializers.IntegerField(source="submission_id")
    agent = serializers.CharField(source="submission.agent.name")
    task = serializers.CharField(source="submission.task.slug")
    status = serializers.CharField()
    due_at = serializers.DateTimeField(allow_null=True)
    closed = serializers.BooleanField(source="is_closed")
    reminded_at = serializers.DateTimeField(allow_null=True)


class RoundAssignmentsSerializer(serializers.Serializer):
    """A round's assignments and how many are submitted (`RoundProgress` plus its round)."""

    round = RoundRefSerializer()
    submitted = serializers.IntegerField(source="n_submitted")
    total = serializers.IntegerField(source="n_total")
    results = RoundAssignmentSerializer(source="assignments", many=True)


class DraftSavedSerializer(serializers.Serializer):
    saved_at = serializers.DateTimeField()
    draft = serializers.JSONField()
