"""The one definition of an agent run's answer: the API's, and the JSON the run
page polls (`/agent-runs/<id>/progress.json`), with the transcript so far."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import AgentRun, AgentRunStage, RunMode
from .selectors import Transcript

INT_MAX = 2**31 - 1  # the columns' range (PostgreSQL integer)


class AgentRunStageSerializer(serializers.ModelSerializer):
    title = serializers.CharField(source="get_name_display", read_only=True)
    status_display = serializers.CharField(source="get_status_display", read_only=True)
    duration_s = serializers.SerializerMethodField()

    class Meta:
        model = AgentRunStage
        fields = [
            "name",
            "title",
            "status",
            "status_display",
            "attempts",
            "started_at",
            "finished_at",
            "duration_s",
            "tokens",
            "cost_usd",
            "note",
            "error",
        ]

    def get_duration_s(self, stage: AgentRunStage) -> float | None:
        if stage.started_at is None or stage.finished_at is None:
            return None
        return round((stage.finished_at - stage.started_at).total_seconds(), 1)


class AgentRunSerializer(serializers.ModelSerializer):
    task = serializers.CharField(source="task.slug", read_only=True)
    task_title = serializers.CharField(source="task.title", read_only=True)
    agent = serializers.CharField(source="agent.name", read_only=True)
    status_display = serializers.CharField(source="get_status_display", read_only=True)
    is_final = serializers.BooleanField(read_only=True)
    # Some calls had no price: the cost so far is then a lower bound.
    cost_is_lower_bound = serializers.SerializerMethodField()
    page_url = serializers.SerializerMethodField()
    submission_url = serializers.SerializerMethodField()
    stages = AgentRunStageSerializer(many=True, read_only=True)

    class Meta:
        model = AgentRun
        fields = [
            "id",
            "page_url",
            "task",
            "task_title",
            "agent",
            "mode",
            "stage",
            "model",
            "lit_model",
            "coding_model",
            "api_base",
            "api_key_env",
            "max_steps",
            "max_tokens",
            "max_cost_usd",
            "seed",
            "input_ids",
            "status",
            "status_display",
            "is_final",
            "tokens",
            "cost_usd",
            "cost_is_lower_bound",
            "reason",
            "failed_stage",
            "cancel_requested",
            "submission",
            "submission_url",
            "created_at",
            "started_at",
            "finished_at",
            "stages",
        ]

    def get_cost_is_lower_bound(self, run: AgentRun) -> bool:
        return run.unpriced_calls > 0

    def get_page_url(self, run: AgentRun) -> str:
        return reverse("agent_runs:run-detail", args=[run.pk])

    def get_submission_url(self, run: AgentRun) -> str | None:
        return run.submission.get_absolute_url() if run.submission is not None else None


class TranscriptStepSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    stage = serializers.CharField()
    started_at = serializers.CharField(allow_null=True)
    duration_s = serializers.FloatField(allow_null=True)
    tokens = serializers.IntegerField()
    cost_usd = serializers.FloatField(allow_null=True)
    text = serializers.CharField(allow_blank=True)
    tool_calls = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))
    tool_results = serializers.ListField(child=serializers.DictField(child=serializers.CharField()))


class TranscriptSerializer(serializers.Serializer):
    available = serializers.BooleanField()
    reset = serializers.BooleanField()
    total = serializers.IntegerField()
    next_after = serializers.IntegerField()
    ended = serializers.DictField(allow_null=True)
    steps = TranscriptStepSerializer(many=True)


class AgentRunProgressSerializer(AgentRunSerializer):
    """The run and its transcript from the asked step on (`context["transcript"]`)."""

    transcript = serializers.SerializerMethodField()

    class Meta(AgentRunSerializer.Meta):
        fields = [*AgentRunSerializer.Meta.fields, "transcript"]

    @extend_schema_field(TranscriptSerializer)
    def get_transcript(self, run: AgentRun) -> dict[str, Any]:
        return TranscriptSerializer(self.context["transcript"]).data


def agent_run_progress_data(run: AgentRun, transcript: Transcript) -> dict[str, Any]:
    """What the run page polls and `GET /api/agent-runs/<id>/` answers."""
    return AgentRunProgressSerializer(run, context={"transcript": transcript}).data


class AgentRunCreateSerializer(serializers.Serializer):
    """`POST /api/agent-runs/`: the names of the form's fields and the command's flags;
    the service checks what they mean (models, key variable, tasks, budgets)."""

    task = serializers.ListField(child=serializers.CharField(max_length=200), allow_empty=True)
    agent = serializers.CharField(max_length=100)
    model = serializers.CharField(max_length=200)
    api_base = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)
    api_key_env = serializers.CharField(
        max_length=100, required=False, default="", allow_blank=True
    )
    coding_model = serializers.CharField(
        max_length=200, required=False, default="", allow_blank=True
    )
    lit_model = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    no_lit_review = serializers.BooleanField(required=False, default=False)
    mode = serializers.CharField(max_length=16, required=False, default=RunMode.END2END)
    stage = serializers.CharField(max_length=16, required=False, default="", allow_blank=True)
    max_steps = serializers.IntegerField(required=False, default=50, max_value=INT_MAX)
    max_tokens = serializers.IntegerField(
        required=False, default=None, allow_null=True, max_value=INT_MAX
    )
    max_cost = serializers.DecimalField(
        max_digits=10, decimal_places=4, required=False, default=None, allow_null=True
    )
    seed = serializers.IntegerField(
        required=False, default=0, min_value=-INT_MAX, max_value=INT_MAX
    )
    input = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=INT_MAX),
        required=False,
        default=list,
    )


def run_arguments(data: Mapping[str, Any]) -> dict[str, Any]:
    """`agent_run_create`'s arguments from `AgentRunCreateSerializer`'s validated
    data (the API and `run_agent`) or the page form's cleaned data (the same names)."""
    return {
        "tasks": list(data.get("task") or []),
        "agent_name": (data.get("agent") or "").strip(),
        "model": data.get("model") or "",
        "api_base": data.get("api_base") or "",
        "api_key_env": data.get("api_key_env") or "",
        "coding_model": data.get("coding_model") or "",
        "lit_model": data.get("lit_model") or "",
        "lit_review": not data.get("no_lit_review"),
        "mode": data.get("mode") or RunMode.END2END,
        "stage": data.get("stage") or "",
        "max_steps": data["max_steps"],
        "max_tokens": data.get("max_tokens"),
        "max_cost_usd": data.get("max_cost"),
        "seed": data.get("seed") or 0,
        "input_ids": list(data.get("input") or []),
    }
