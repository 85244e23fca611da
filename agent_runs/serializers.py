"""The one definition of an agent run's answer: the API's, and the JSON the run
page polls (`/agent-runs/<id>/progress.json`), with the transcript so far."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .models import STEPWISE_STAGES, AgentRun, AgentRunStage, RunMode
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
    """`POST /api/agent-runs/`, the organisers' page form (`AgentRunForm`, drawn from
    these fields) and `run_agent`'s flags: one definition of what a new run takes.
    The service checks what the values mean (models, key variable, tasks, budgets)
    and says every problem at once, so a blank model or agent is left to it."""

    task = serializers.ListField(
        child=serializers.CharField(max_length=200),
        allow_empty=True,
        label="Tasks",
        help_text="One run per task (Ctrl- or Cmd-click to choose several).",
    )
    agent = serializers.CharField(
        max_length=100,
        allow_blank=True,
        help_text="Registered in the organisers' MLR-Agent team when new.",
    )
    model = serializers.CharField(
        max_length=200, allow_blank=True, label="Idea, proposal and paper model"
    )
    lit_model = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        label="Literature-review model",
        help_text="A search-capable model; empty: the main model.",
    )
    no_lit_review = serializers.BooleanField(
        required=False, default=False, label="No literature review"
    )
    coding_model = serializers.CharField(
        max_length=200,
        required=False,
        default="",
        allow_blank=True,
        help_text="The coding loop's model; empty: the main model.",
    )
    api_base = serializers.CharField(
        max_length=500,
        required=False,
        default="",
        allow_blank=True,
        label="API base URL",
        help_text="An OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1); empty: the "
        "provider's.",
    )
    api_key_env = serializers.CharField(
        max_length=100,
        required=False,
        default="",
        allow_blank=True,
        label="API key variable",
        help_text="The NAME of the environment variable that holds the key, never the key.",
    )
    mode = serializers.ChoiceField(choices=RunMode.choices, required=False, default=RunMode.END2END)
    stage = serializers.ChoiceField(
        choices=[(stage, stage) for stage in STEPWISE_STAGES],
        required=False,
        default="",
        allow_blank=True,
        help_text="Stepwise only: the stage the run produces.",
    )
    input = serializers.ListField(
        child=serializers.IntegerField(
            min_value=1,
            max_value=INT_MAX,
            error_messages={"invalid": "a submission id is a whole number"},
        ),
        required=False,
        default=list,
        label="Input submissions",
        help_text="Stepwise only: ids of the previous stage's submissions to build on "
        "(empty: sampled with the seed).",
    )
    max_steps = serializers.IntegerField(
        required=False, default=50, max_value=INT_MAX, label="Max steps"
    )
    max_tokens = serializers.IntegerField(
        required=False, default=None, allow_null=True, max_value=INT_MAX, label="Max tokens"
    )
    max_cost = serializers.DecimalField(
        max_digits=10,
        decimal_places=4,
        required=False,
        default=None,
        allow_null=True,
        label="Max cost (USD)",
    )
    seed = serializers.IntegerField(
        required=False, default=0, min_value=-INT_MAX, max_value=INT_MAX
    )


def run_arguments(data: Mapping[str, Any]) -> dict[str, Any]:
    """`agent_run_create`'s arguments from `AgentRunCreateSerializer`'s validated data."""
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
