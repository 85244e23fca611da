"""The shapes of the judging API's answers (also what the OpenAPI schema shows):
each is the one definition of its answer, read from what the selectors return
(`selectors.SubmissionJudgments`)."""

from datetime import datetime
from typing import Any

from rest_framework import serializers

from common.drf import ErrorSerializer

from .models import JudgmentKind


class IsoDateTimeField(serializers.DateTimeField):
    """A moment as Python writes it (`isoformat()`, "+00:00"), as the answer always did."""

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()  # a null never gets here (the serializer writes it)


class ScoreSerializer(serializers.Serializer):
    score = serializers.FloatField()
    justification = serializers.CharField(allow_blank=True)


class FindingSerializer(serializers.Serializer):
    type = serializers.CharField(allow_blank=True, help_text="empty: an untyped yes/no verdict")
    description = serializers.CharField(allow_blank=True)
    evidence = serializers.CharField(allow_blank=True)


# The fields only one kind of judgment has (the other's answer leaves them out).
_SCORE_ONLY = ("scores", "strengths", "weaknesses", "hallucination_details")
_HALLUCINATION_ONLY = ("findings", "overall_assessment")


# Read from a `selectors.JudgmentEntry` (its docstring is the schema's description).
class JudgmentStatusSerializer(serializers.Serializer):
    """A scoring judgment carries `scores`, `strengths`, `weaknesses` and
    `hallucination_details`; a hallucination review (`kind`) carries `findings`
    and `overall_assessment` instead."""

    id = serializers.IntegerField(
        source="judgment.pk", allow_null=True, help_text="null: the judge has not been queued"
    )
    kind = serializers.CharField(help_text="score or hallucination")
    judge = serializers.CharField(source="judge.name")
    model = serializers.CharField(source="judge.model")
    condition = serializers.CharField(help_text="with_code or no_code")
    status = serializers.CharField(help_text="queued, running, done, failed or not_queued")
    attempts = serializers.IntegerField(
        source="judgment.attempts", help_text="calls to the model in the latest run"
    )
    error = serializers.CharField(source="judgment.error", allow_blank=True)
    imported = serializers.BooleanField(source="judgment.imported")
    rubric_version = serializers.IntegerField(source="judgment.rubric.version", allow_null=True)
    # Only a scoring judgment has these (required=False: left out of a review's answer).
    scores = serializers.DictField(child=ScoreSerializer(), required=False)
    strengths = serializers.ListField(
        source="judgment.strengths", child=serializers.CharField(), required=False
    )
    weaknesses = serializers.ListField(
        source="judgment.weaknesses", child=serializers.CharField(), required=False
    )
    hallucination_details = serializers.CharField(
        source="judgment.hallucination_details", allow_blank=True, required=False
    )
    # Only a hallucination review has these.
    findings = FindingSerializer(many=True, required=False)
    overall_assessment = serializers.CharField(
        source="judgment.overall_assessment", allow_blank=True, required=False
    )
    confidence = serializers.IntegerField(source="judgment.confidence", allow_null=True)
    has_hallucination = serializers.BooleanField(
        source="judgment.has_hallucination", allow_null=True
    )
    input_tokens = serializers.IntegerField(source="judgment.input_tokens", allow_null=True)
    output_tokens = serializers.IntegerField(source="judgment.output_tokens", allow_null=True)
    cost_usd = serializers.FloatField(
        source="judgment.cost_usd", allow_null=True, help_text="null: unknown price"
    )
    latency_seconds = serializers.FloatField(source="judgment.latency_seconds", allow_null=True)
    finished_at = IsoDateTimeField(source="judgment.finished_at", allow_null=True)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        for name in _HALLUCINATION_ONLY if instance.kind == JudgmentKind.SCORE else _SCORE_ONLY:
            data.pop(name, None)
        return data


class SubmissionNotCountedSerializer(serializers.Serializer):
    panel = serializers.CharField()
    reason = serializers.CharField()


# Read from a `selectors.SubmissionJudgments` (its docstring is the schema's description).
class SubmissionJudgmentsSerializer(serializers.Serializer):
    submission = serializers.IntegerField(source="submission.pk")
    submission_status = serializers.CharField(source="state")
    progress = serializers.DictField(child=serializers.IntegerField())
    complete = serializers.BooleanField(help_text="every queued judgment is done or failed")
    signature = serializers.CharField(help_text="changes whenever the progress or a result does")
    stage_score = serializers.FloatField(
        allow_null=True, help_text="the mean over judges of the Overall score (with code)"
    )
    stage_scores = serializers.DictField(
        child=serializers.DictField(child=serializers.FloatField(allow_null=True)),
        help_text="per condition, each dimension's mean over the judges",
    )
    cost_usd = serializers.FloatField(allow_null=True)
    panel = serializers.CharField(
        source="panel.name",
        allow_null=True,
        help_text="The judge panel whose mean `stage_score` is (the stage's default); "
        "null: every judge (no panel)",
    )
    not_counted = SubmissionNotCountedSerializer(
        allow_null=True,
        help_text="Set when the panel's boards leave the submission out: a panel judge "
        "failed on it or has not finished, and why",
    )
    judgments = JudgmentStatusSerializer(many=True)


class QueueResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    requeued = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    skipped = serializers.ListField(child=serializers.CharField())


class QueueConflictSerializer(ErrorSerializer, QueueResultSerializer):
    """A 409 from queueing: nothing was queued; the counts stand beside the errors."""
