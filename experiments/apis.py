"""Read-only API of experiment runs: `GET /api/experiments/?submission=ID`."""

import django_filters
from django.urls import reverse
from rest_framework import serializers, viewsets

from common.filters import WholeNumberFilter
from experiments.models import ExperimentPhase, ExperimentRun, ExperimentStatus, ReproductionCheck

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
