"""The shapes of the judging API's answers (also what the OpenAPI schema shows)."""

from rest_framework import serializers

from common.drf import ErrorSerializer


class ScoreSerializer(serializers.Serializer):
    score = serializers.FloatField()
    justification = serializers.CharField(allow_blank=True)


class FindingSerializer(serializers.Serializer):
    type = serializers.CharField(allow_blank=True, help_text="empty: an untyped yes/no verdict")
    description = serializers.CharField(allow_blank=True)
    evidence = serializers.CharField(allow_blank=True)


class JudgmentStatusSerializer(serializers.Serializer):
    """A scoring judgment carries `scores`, `strengths`, `weaknesses` and
    `hallucination_details`; a hallucination review (`kind`) carries `findings`
    and `overall_assessment` instead."""

    id = serializers.IntegerField(allow_null=True, help_text="null: the judge has not been queued")
    kind = serializers.CharField(help_text="score or hallucination")
    judge = serializers.CharField()
    model = serializers.CharField()
    condition = serializers.CharField(help_text="with_code or no_code")
    status = serializers.CharField(help_text="queued, running, done, failed or not_queued")
    attempts = serializers.IntegerField(help_text="calls to the model in the latest run")
    error = serializers.CharField(allow_blank=True)
    imported = serializers.BooleanField()
    rubric_version = serializers.IntegerField(allow_null=True)
    # Only a scoring judgment has these (required=False: left out of a review's answer).
    scores = serializers.DictField(child=ScoreSerializer(), required=False)
    strengths = serializers.ListField(child=serializers.CharField(), required=False)
    weaknesses = serializers.ListField(child=serializers.CharField(), required=False)
    hallucination_details = serializers.CharField(allow_blank=True, required=False)
    # Only a hallucination review has these.
    findings = FindingSerializer(many=True, required=False)
    overall_assessment = serializers.CharField(allow_blank=True, required=False)
    confidence = serializers.IntegerField(allow_null=True)
    has_hallucination = serializers.BooleanField(allow_null=True)
    input_tokens = serializers.IntegerField(allow_null=True)
    output_tokens = serializers.IntegerField(allow_null=True)
    cost_usd = serializers.FloatField(allow_null=True, help_text="null: unknown price")
    latency_seconds = serializers.FloatField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class SubmissionNotCountedSerializer(serializers.Serializer):
    panel = serializers.CharField()
    reason = serializers.CharField()


class SubmissionJudgmentsSerializer(serializers.Serializer):
    submission = serializers.IntegerField()
    submission_status = serializers.CharField()
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
