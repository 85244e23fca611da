"""The public, read-only API: the leaderboard, judgments, and the full export."""

import datetime as dt
import json
from collections.abc import Callable

import django_filters
from django.http import HttpResponse, StreamingHttpResponse
from django.utils.cache import get_conditional_response
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import viewsets
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchmark.models import Conference, Topic
from common.csv_cells import csv_text
from common.errors import NotFound, PermissionDenied, ValidationFailed, form_error_items
from common.filters import WholeNumberFilter
from judging.models import JudgingCondition, Judgment, JudgmentStatus
from submissions.visibility import hidden_submission_ids, task_hidden_from, unseen_submission_ids

from .caching import cached
from .exports import EXPORT_FORMATS, export_stream
from .forms import (
    BOARD_CHOICES,
    STAGE_CHOICES,
    AgentCompareForm,
    LeaderboardQueryForm,
    ObjectiveQueryForm,
)
from .payloads import (
    agents_compare_payload,
    judge_board_payload,
    leaderboard_payload,
    objective_payload,
)
from .releases import release_file_get, release_get, release_panel_data
from .selectors.fabrication import (
    FABRICATION_STAGES,
    RULES,
    fabrication_query_parse,
    fabrication_report,
)
from .selectors.objective import OBJECTIVE_STAGE
from .serializers import (
    AgentComparisonSerializer,
    FabricationSerializer,
    JudgeBoardSerializer,
    JudgmentSerializer,
    LeaderboardSerializer,
    ObjectiveLeaderboardSerializer,
)
from .tables import leaderboard_table, objective_table
from .throttling import ExportAnonThrottle, PublicAnonThrottle, ReleaseFileAnonThrottle


class LeaderboardCSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if isinstance(data, dict) and data.get("stage") == OBJECTIVE_STAGE and "rows" in data:
            header, rows = objective_table(data)
            return csv_text(header, rows).encode("utf-8")
        if isinstance(data, dict) and "rows" in data and "dimensions" in data:
            header, rows = leaderboard_table(data)
            return csv_text(header, rows).encode("utf-8")
        # An error answer (bad parameter, throttled) stays readable as CSV.
        return csv_text(["error"], [[json.dumps(data)]]).encode("utf-8")


class ZipRenderer(BaseRenderer):
    """Lets clients ask for `application/zip`; errors are then written as JSON."""

    media_type = "application/zip"
    format = "zip"
    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return json.dumps(data).encode("utf-8")


def _choices(pairs) -> list[str]:
    return [value for value, _label in pairs]


LEADERBOARD_PARAMETERS = [
    OpenApiParameter(
        "stage",
        str,
        enum=_choices(BOARD_CHOICES),
        description=(
            "Default `end2end`. `objective` ranks agents on the objective tasks by mean "
            "relative improvement to human instead (rows carry `mean_relative_improvement` "
            "and per-task `tasks`; the other parameters do not apply to it)."
        ),
    ),
    OpenApiParameter(
        "idea_source",
        str,
        description="`objective` only: the trials of one configuration (none, human, agent or "
        "a label such as coi); the answer's `idea_sources` lists those there are.",
    ),
    OpenApiParameter("conference", str, enum=_choices(Conference.choices)),
    OpenApiParameter("year", int),
    OpenApiParameter("topic", str, enum=_choices(Topic.choices)),
    OpenApiParameter("task", str, description="Only this task (its slug)."),
    OpenApiParameter(
        "panel",
        str,
        description="A judge panel by name (`judges panel list`); default: the stage's "
        "default panel. The scores are its judges' mean; `panel` is in every row and answer.",
    ),
    OpenApiParameter(
        "judge",
        str,
        description="One judge by name instead of the mean, on the submissions the panel counts.",
    ),
    OpenApiParameter(
        "condition",
        str,
        enum=_choices(JudgingCondition.choices),
        description="Default `with_code`.",
    ),
    OpenApiParameter(
        "exclude_same_family",
        bool,
        description="Leave out judges of the agent's own model family.",
    ),
    OpenApiParameter("common_tasks", bool, description="Only tasks that every listed agent has."),
    OpenApiParameter(
        "sort",
        str,
        description=(
            "Column to order by: `rank`, `agent`, `n_tasks`, `cost`, `fabrication`, "
            "`human` or a dimension key; `-` first for descending."
        ),
    ),
    OpenApiParameter("format", str, enum=["json", "csv"]),
]


class LeaderboardAPIView(APIView):
    """Agents ranked by their mean Overall score over tasks for one stage."""

    permission_classes = [AllowAny]
    throttle_classes = [PublicAnonThrottle]
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, LeaderboardCSVRenderer]

    @extend_schema(
        operation_id="leaderboard",
        parameters=LEADERBOARD_PARAMETERS,
        responses={
            (200, "application/json"): PolymorphicProxySerializer(
                component_name="LeaderboardAnswer",
                serializers=[LeaderboardSerializer, ObjectiveLeaderboardSerializer],
                resource_type_field_name=None,
            ),
            (200, "text/csv"): OpenApiTypes.STR,
            400: OpenApiResponse(description="A parameter is not valid; `errors` says which."),
        },
    )
    def get(self, request: Request) -> Response:
        form = LeaderboardQueryForm(request.query_params)
        if not form.is_valid():
            raise ValidationFailed(items=form_error_items(form.errors))
        query = form.leaderboard_query()
        if query.task and task_hidden_from(user=request.user, slug=query.task):
            raise NotFound(f"no task {query.task!r}", field="task")
        if query.stage == OBJECTIVE_STAGE:
            objective_form = ObjectiveQueryForm(request.query_params)
            if not objective_form.is_valid():
                raise ValidationFailed(items=form_error_items(objective_form.errors))
            payload = objective_payload(
                idea_source=objective_form.cleaned_data["idea_source"] or None
            )
        else:
            payload = leaderboard_payload(query, sort=form.cleaned_data.get("sort") or "")
        response = Response(payload)
        # An explicit format is a download (the page's links): name the file.
        chosen = request.query_params.get("format")
        if chosen in ("csv", "json") and request.accepted_renderer.format == chosen:
            response["Content-Disposition"] = (
                f'attachment; filename="leaderboard-{query.stage}.{chosen}"'
            )
        return response


class AgentCompareAPIView(APIView):
    """Two agents of a stage's board side by side: agent `a` minus agent `b`
    on the tasks both were judged on, per dimension with a 95% paired
    bootstrap interval and p, and per task."""

    permission_classes = [AllowAny]
    throttle_classes = [PublicAnonThrottle]

    @extend_schema(
        operation_id="leaderboard_compare",
        parameters=[
            OpenApiParameter("a", str, required=True, description="An agent's name."),
            OpenApiParameter("b", str, required=True, description="Another agent's name."),
            *(p for p in LEADERBOARD_PARAMETERS if p.name not in ("sort", "format", "idea_source")),
        ],
        responses={
            200: AgentComparisonSerializer,
            400: OpenApiResponse(description="A parameter is not valid; `errors` says which."),
        },
    )
    def get(self, request: Request) -> Response:
        form = AgentCompareForm(request.query_params)
        if not form.is_valid():
            raise ValidationFailed(items=form_error_items(form.errors))
        return Response(
            agents_compare_payload(
                form.leaderboard_query(), a=form.cleaned_data["a"], b=form.cleaned_data["b"]
            )
        )


class JudgeBoardAPIView(APIView):
    """The judges' leaderboard of a stage: each judge's agreement with the
    experts per dimension, the mean score it gives and its spread,
    self-preference, length bias, cost, latency and failures, beside the mean
    of the judges, a human expert and a baseline judge that scores by paper
    length. Every figure carries its n and, when empty, why."""

    permission_classes = [AllowAny]
    throttle_classes = [PublicAnonThrottle]

    @extend_schema(
        operation_id="judges_leaderboard",
        parameters=[
            OpenApiParameter(
                "stage", str, enum=_choices(STAGE_CHOICES), description="Default `end2end`."
            ),
            OpenApiParameter(
                "sort",
                str,
                description="`name`, `mean_abs_diff`, `spearman_rho`, `krippendorff_alpha`, "
                "`mann_whitney_p` (Overall's), `mean_score`, `spread`, `self_preference`, "
                "`length_bias`, `cost_per_judgment`, `median_latency_seconds`, `failure_rate`, "
                "`cost_per_hallucination_review`, `fabrication_recall`, `fabrication_precision`; "
                "`-` first for descending.",
            ),
        ],
        responses={
            200: JudgeBoardSerializer,
            400: OpenApiResponse(description="A parameter is not valid; `errors` says which."),
        },
    )
    def get(self, request: Request) -> Response:
        stage = request.query_params.get("stage") or "end2end"
        sort = request.query_params.get("sort") or ""
        return Response(judge_board_payload(stage=stage, sort=sort))


class JudgmentFilter(django_filters.FilterSet):
    stage = django_filters.ChoiceFilter(field_name="submission__stage", choices=STAGE_CHOICES)
    agent = django_filters.CharFilter(field_name="submission__agent__name")
    task = django_filters.CharFilter(field_name="submission__task__slug")
    submission = WholeNumberFilter(field_name="submission_id")
    judge = django_filters.CharFilter(field_name="judge__name")
    condition = django_filters.ChoiceFilter(choices=JudgingCondition.choices)
    has_hallucination = django_filters.BooleanFilter()

    class Meta:
        model = Judgment
        fields = [
            "stage",
            "agent",
            "task",
            "submission",
            "judge",
            "condition",
            "has_hallucination",
        ]


class JudgmentPagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500


class JudgmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Finished judgments: every dimension's score and justification, the
    judge, the condition, tokens and cost. Filter with `stage`, `agent`,
    `task`, `submission`, `judge`, `condition`, `has_hallucination`; pages of
    `page_size` (default 50, at most 500)."""

    permission_classes = [AllowAny]
    throttle_classes = [PublicAnonThrottle]
    serializer_class = JudgmentSerializer
    filterset_class = JudgmentFilter
    pagination_class = JudgmentPagination

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema reads no database
            return Judgment.objects.none()
        return (
            Judgment.objects.filter(status=JudgmentStatus.DONE, submission__agent__is_system=False)
            .exclude(submission_id__in=unseen_submission_ids(user=self.request.user))
            .select_related("submission__agent", "submission__task", "judge", "rubric")
            .prefetch_related("scores", "findings")
            .order_by("id")
        )

    def list(self, request, *args, **kwargs):
        # Public data, the same for everyone but a reviewer with papers still
        # to review blind: cache the page until data changes.
        hidden = sorted(unseen_submission_ids(user=request.user))
        key = (request.build_absolute_uri(), request.accepted_renderer.format, *hidden)
        data = cached("judgments", key, lambda: super(JudgmentViewSet, self).list(request).data)
        return Response(data)


class ExportAPIView(APIView):
    """The whole public dataset as a zip, streamed: tasks, agents, submissions,
    judgments and scores (plus released human reviews when there are any), each
    as CSV and as JSON Lines."""

    permission_classes = [AllowAny]
    throttle_classes = [ExportAnonThrottle]
    renderer_classes = [JSONRenderer, ZipRenderer]

    @extend_schema(
        operation_id="export",
        parameters=[
            OpenApiParameter(
                "formats",
                str,
                description="Comma-separated: `csv`, `jsonl` (default both).",
            )
        ],
        responses={
            (200, "application/zip"): OpenApiTypes.BINARY,
            400: OpenApiResponse(description="An unknown format."),
        },
    )
    def get(self, request: Request):
        if hidden_submission_ids(user=request.user):
            # The export names every paper's agent; a reviewer gets it once
            # their assigned reviews are in.
            raise PermissionDenied(
                "You have papers to review blind: the export opens to you once "
                "your assigned reviews are submitted.",
                code="reviews_pending",
            )
        raw = request.query_params.get("formats") or ",".join(EXPORT_FORMATS)
        formats = list(dict.fromkeys(f.strip() for f in raw.split(",") if f.strip()))
        unknown = [f for f in formats if f not in EXPORT_FORMATS]
        if unknown or not formats:
            raise ValidationFailed(
                f"unknown format {', '.join(unknown) or '(none)'}; "
                f"choose from {', '.join(EXPORT_FORMATS)}",
                code="invalid_choice",
                field="formats",
            )
        response = StreamingHttpResponse(export_stream(formats), content_type="application/zip")
        today = dt.datetime.now(tz=dt.UTC).date().isoformat()
        response["Content-Disposition"] = f'attachment; filename="mlrbench-export-{today}.zip"'
        return response


class FabricationAPIView(APIView):
    """Fabrication for a stage: per agent and source (the judges under the rule, each
    judge, the experts, the reproduction check), the share of tasks flagged for each
    hallucination type and for any, with 95% Wilson intervals; and how well the
    judges catch what the experts and the reproduction check found."""

    permission_classes = [AllowAny]
    throttle_classes = [PublicAnonThrottle]

    @extend_schema(
        operation_id="fabrication",
        parameters=[
            OpenApiParameter("stage", str, enum=list(FABRICATION_STAGES)),
            OpenApiParameter("rule", str, enum=list(RULES), description="Default `any`."),
            OpenApiParameter("judge", str, description="One judge's flags instead of a rule."),
        ],
        responses={200: FabricationSerializer},
    )
    def get(self, request: Request) -> Response:
        query = fabrication_query_parse(request.query_params)
        data = cached(
            "fabrication",
            (query.stage, query.rule, query.judge),
            lambda: FabricationSerializer(fabrication_report(query)).data,
        )
        return Response(data)


def _refuse_blind_reviewers(request: Request) -> None:
    # A release holds every judgment with its agent, as the export does.
    if hidden_submission_ids(user=request.user):
        raise PermissionDenied(
            "You have papers to review blind: releases open to you once "
            "your assigned reviews are submitted.",
            code="reviews_pending",
        )


def _stored_bytes(
    request: Request,
    content: Callable[[], bytes],
    *,
    media_type: str,
    sha256: str = "",
    etag: str = "",
) -> HttpResponse:
    """A release's stored bytes as a static file: an ETag (their hash) and a
    year's immutable caching, so that a client or a proxy that has them asks
    with `If-None-Match` and gets a 304 without the bytes."""
    tag = f'"{etag or sha256}"'
    headers = {"ETag": tag, "Cache-Control": "public, max-age=31536000, immutable"}
    if sha256:
        headers["X-Content-SHA256"] = sha256
    response = get_conditional_response(request._request, etag=tag)
    if response is None:
        response = HttpResponse(content(), content_type=media_type)
    for header, value in headers.items():
        response[header] = value
    return response


class ReleaseAPIView(APIView):
    """A release's frozen data: exactly the canonical JSON stored when it was
    made (its SHA-256 is in the `X-Content-SHA256` header), forever."""

    permission_classes = [AllowAny]
    throttle_classes = [ReleaseFileAnonThrottle]

    @extend_schema(
        operation_id="release",
        parameters=[
            OpenApiParameter(
                "panel",
                str,
                description="Only the boards the release froze for this judge panel "
                "(`{release, panel, judges, default_for, leaderboards}`).",
            )
        ],
        responses={
            (200, "application/json"): OpenApiTypes.OBJECT,
            404: OpenApiResponse(description="No such release, or no such panel in it."),
        },
    )
    def get(self, request: Request, name: str) -> HttpResponse:
        _refuse_blind_reviewers(request)
        release = release_get(name=name)
        if panel := request.query_params.get("panel"):
            return Response(release_panel_data(release, panel=panel))
        return _stored_bytes(
            request,
            lambda: bytes(release.content),
            media_type="application/json",
            sha256=release.content_sha256,
        )


class ReleaseExportAPIView(APIView):
    """A release's download: its JSON, SHA256SUMS and each stage's CSV, the same bytes forever."""

    permission_classes = [AllowAny]
    throttle_classes = [ReleaseFileAnonThrottle]

    @extend_schema(
        operation_id="release_export",
        responses={
            (200, "application/zip"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="No such release."),
        },
    )
    def get(self, request: Request, name: str) -> HttpResponse:
        _refuse_blind_reviewers(request)
        release = release_get(name=name)
        response = _stored_bytes(
            request,
            lambda: bytes(release.export_zip),
            media_type="application/zip",
            # Made from the release's content once, and stored: the same bytes forever.
            etag=f"{release.content_sha256}-zip",
        )
        response["Content-Disposition"] = (
            f'attachment; filename="mlrbench-release-{release.name}.zip"'
        )
        return response


class ReleaseFileAPIView(APIView):
    """One file of a release (a table as Parquet, `README.md`, `croissant.json`): the
    bytes stored when it was made, their SHA-256 in `X-Content-SHA256` (the release's
    JSON lists the same), so `pandas.read_parquet(URL)` reads it as published."""

    permission_classes = [AllowAny]
    throttle_classes = [ReleaseFileAnonThrottle]

    @extend_schema(
        operation_id="release_file",
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="No such release or file."),
        },
    )
    def get(self, request: Request, name: str, file: str) -> HttpResponse:
        _refuse_blind_reviewers(request)
        stored = release_file_get(name=name, file=file)
        return _stored_bytes(
            request,
            lambda: bytes(stored.content),
            media_type=stored.media_type,
            sha256=stored.sha256,
        )
