"""Read-only API of experiment runs (`GET /api/experiments/?submission=ID`), objective
tasks with their environment (`/api/objective/tasks/`) and their analyses."""

import django_filters
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import NotFound, ValidationFailed
from common.filters import WholeNumberFilter
from experiments.models import (
    ExperimentPhase,
    ExperimentRun,
    ExperimentStatus,
    ObjectiveTask,
    ReproductionCheck,
)

from .analyses import objective_analyses
from .environments import environment_state
from .selectors import experiment_runs


class ExperimentRunFilter(django_filters.FilterSet):
    submission = WholeNumberFilter(field_name="submission_id")
    phase = django_filters.ChoiceFilter(choices=ExperimentPhase.choices)
    status = django_filters.ChoiceFilter(choices=ExperimentStatus.choices)

    class Meta:
        model = ExperimentRun
        fields = ["submission", "phase", "status"]


class ReproductionCheckSerializer(serializers.ModelSerializer):
    class Meta:
        model = ReproductionCheck
        fields = ["verdict", "summary", "evidence", "tolerance", "created_at"]


class ExperimentRunSerializer(serializers.ModelSerializer):
    reproduction = ReproductionCheckSerializer(read_only=True, allow_null=True)
    page_url = serializers.SerializerMethodField()
    log_url = serializers.SerializerMethodField()

    class Meta:
        model = ExperimentRun
        fields = [
            "id",
            "page_url",
            "log_url",
            "submission",
            "phase",
            "command",
            "status",
            "exit_code",
            "limit_hit",
            "reason",
            "metrics",
            "score",
            "outputs",
            "wall_seconds",
            "peak_memory_bytes",
            "gpu_count",
            "gpus",
            "worker_host",
            "rerun_of",
            "created_at",
            "started_at",
            "finished_at",
            "reproduction",
        ]

    def get_page_url(self, run: ExperimentRun) -> str:
        return reverse("experiments:run-detail", args=[run.pk])

    def get_log_url(self, run: ExperimentRun) -> str:
        return reverse("experiments:run-log", args=[run.pk])


class ExperimentRunViewSet(viewsets.ReadOnlyModelViewSet):
    """Sandboxed runs of submitted code, newest first, with their status, metrics
    and reproduction verdict. Filter with `submission`, `phase`, `status`."""

    serializer_class = ExperimentRunSerializer
    filterset_class = ExperimentRunFilter

    def get_queryset(self):
        return experiment_runs(user=self.request.user)


class EnvironmentSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["missing", "building", "ready", "failed"])
    packages = serializers.ListField(child=serializers.CharField(), help_text="`pip freeze`.")
    error = serializers.CharField(allow_blank=True)
    requirements = serializers.ListField(child=serializers.CharField())
    python = serializers.CharField(allow_blank=True, help_text="`host`: no packages asked for.")
    python_requested = serializers.CharField(
        allow_blank=True, help_text="The environment file's `python=X.Y` (blank: any)."
    )
    python_version = serializers.CharField(
        allow_blank=True, help_text="The built environment's Python version."
    )
    python_note = serializers.CharField(
        allow_blank=True, help_text="Why the Python used is not the one asked for."
    )


class ObjectiveTaskSerializer(serializers.ModelSerializer):
    task = serializers.CharField(source="task.slug")
    environment = serializers.SerializerMethodField()

    class Meta:
        model = ObjectiveTask
        fields = [
            "task",
            "format",
            "version",
            "metric",
            "higher_is_better",
            "metric_min",
            "metric_max",
            "baseline_score",
            "human_score",
            "test_phase",
            "test_folder",
            "environment",
            "dev_baseline_score",
            "scoring_forgeable",
            "scoring_check",
        ]
        extra_kwargs = {
            "dev_baseline_score": {
                "help_text": "The baseline's dev score (MLRC-Bench's improvement_perc on dev "
                "divides by it): the organiser's, or the forged-label check's run."
            },
            "scoring_forgeable": {
                "help_text": "true: the task's get_score reads labels from the method's own "
                "output (a method can choose its score); false: the check found it does not; "
                "null: not checked yet. `scoring_check` says why."
            },
            "scoring_check": {"help_text": "What the forged-label check found, in words."},
        }

    def get_environment(self, objective: ObjectiveTask) -> dict:
        state = environment_state(
            list(objective.environment_requirements or []), objective.environment_python
        )
        return dict(EnvironmentSerializer(state).data)


class ObjectiveTaskViewSet(viewsets.ReadOnlyModelViewSet):
    """Objective tasks with their metric, scores, test phase and the Python
    environment of their current version (`environment.status`)."""

    serializer_class = ObjectiveTaskSerializer
    lookup_field = "task__slug"
    lookup_url_kwarg = "slug"
    queryset = ObjectiveTask.objects.select_related("task").order_by("task__slug")


class ObjectiveAnalysesView(APIView):
    """`GET /api/objective/analyses/?task=SLUG`: analyses of one task per agent
    and configuration: the site's own (best of k trials, improvement over the
    baseline, cost per trial and gain per dollar, the trace's argument errors and
    self-repairs, the trend over the dev runs), each with n, and under
    `mlrc_bench` MLRC-Bench's, by its formulas (Pass@k, success rates,
    improvement_perc, relative runtime and complexity, API cost with its Pareto
    front, Chain-of-Ideas pooling); `idea_source` keeps one configuration
    (none, human, agent, coi, ...). `scoring_forgeable`: the forged-label check."""

    @extend_schema(
        parameters=[
            OpenApiParameter("task", str, required=True, description="the objective task's slug"),
            OpenApiParameter("idea_source", str, description="none, human, agent or a label"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> Response:
        slug = request.query_params.get("task", "").strip()
        if not slug:
            raise ValidationFailed(field="task", message="name the task: ?task=SLUG")
        objective = ObjectiveTask.objects.select_related("task").filter(task__slug=slug).first()
        if objective is None:
            raise NotFound(f"there is no objective task {slug}")
        source = request.query_params.get("idea_source", "").strip().lower() or None
        return Response(objective_analyses(objective=objective, idea_source=source))
