from pathlib import Path

import django_filters
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticatedOrReadOnly
from rest_framework.response import Response

from benchmark.accounts import user_owns_agent
from benchmark.authentication import ApiTokenAuthentication
from benchmark.models import ModelFamily
from common.errors import PermissionDenied, ValidationFailed

from .intake import DuplicateSubmission, submission_intake
from .ledger import ledger_known, not_computed, submission_ledger
from .models import Stage, SubmissionSource
from .page_panels import submission_notices
from .selectors import agent_list, submission_list
from .serializers import (
    AgentSerializer,
    DuplicateSubmissionErrorSerializer,
    ProvenanceSerializer,
    SubmissionDetailSerializer,
    SubmissionSerializer,
    SubmissionUploadSerializer,
)
from .states import STATE, submission_state_choices
from .uploads import upload_refusal, upload_slot
from .visibility import agents_visible_to, submissions_visible_to


class SubmissionFilter(django_filters.FilterSet):
    agent = django_filters.CharFilter(field_name="agent__name")
    task = django_filters.CharFilter(field_name="task__slug")
    stage = django_filters.ChoiceFilter(choices=Stage.choices)
    # The state shown in `status` (received, ready, failed, judging, judged).
    status = django_filters.ChoiceFilter(field_name=STATE, choices=submission_state_choices)


class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Agent submissions. Filter the list with `agent`, `task`, `stage`, `status`.

    Upload with a token: `curl -H "Authorization: Token $KEY" -F agent=NAME
    -F task=SLUG -F stage=end2end -F archive=@run.zip .../api/submissions/`;
    name its inputs with `-F based_on=ID` (repeated), or `based_on.json` in the archive.
    """

    authentication_classes = [ApiTokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticatedOrReadOnly]
    filterset_class = SubmissionFilter
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema reads no database
            return submission_list().none()
        queryset = submissions_visible_to(user=self.request.user, submissions=submission_list())
        if self.action == "retrieve":
            queryset = queryset.prefetch_related("artifacts", "inputs", "outputs")
        return queryset

    def get_serializer_class(self):
        if self.action == "create":
            return SubmissionUploadSerializer
        return SubmissionDetailSerializer if self.action == "retrieve" else SubmissionSerializer

    @extend_schema(
        request={"multipart/form-data": SubmissionUploadSerializer},
        responses={
            201: OpenApiResponse(description="Stored: `id`, `url`, `page_url`, `version`."),
            400: OpenApiResponse(description="Bad input; the errors name the fields."),
            401: OpenApiResponse(description="No or bad token."),
            403: OpenApiResponse(description="The agent belongs to another team."),
            409: OpenApiResponse(
                DuplicateSubmissionErrorSerializer,
                description="The same archive again; `id` and `url` are the existing one's.",
            ),
        },
    )
    def create(self, request, *args, **kwargs):
        serializer = SubmissionUploadSerializer(data=request.data)
        refusal = upload_refusal(request, "archive")
        if refusal:
            raise ValidationFailed(refusal, code="too_large", field="archive")
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        if not user_owns_agent(user=request.user, agent=data["agent"]):
            raise PermissionDenied(
                f"agent {data['agent'].name!r} belongs to another team", field="agent"
            )
        archive = data["archive"]
        try:
            with upload_slot(user_id=request.user.pk):
                submission = submission_intake(
                    agent=data["agent"],
                    task=data["task"],
                    stage=data["stage"],
                    archive=_upload_path(archive),
                    archive_name=archive.name,
                    archive_sha256=getattr(archive, "sha256", None),
                    uploader=request.user,
                    source=SubmissionSource.API,
                    based_on=data.get("based_on"),
                )
        except DuplicateSubmission as exc:
            # Only the request can make the existing submission's address absolute.
            exc.extra["url"] = self._url(exc.submission.pk)
            raise
        return Response(
            {
                "id": submission.pk,
                "url": self._url(submission.pk),
                "page_url": request.build_absolute_uri(submission.get_absolute_url()),
                "version": submission.version,
                "status": submission.status,
                "artifacts": submission.artifacts.count(),
                "notices": submission_notices(submission=submission),
            },
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(responses={200: ProvenanceSerializer})
    @action(detail=True, methods=["get"], url_path="provenance")
    def provenance(self, request, pk=None):
        """Where each number the submission's paper reports came from: one entry
        per number with its `text`, `where`, `class` (measured, derived,
        hard-coded, written, untraced) and `evidence`. Without a trace: status
        "no trace" and verdict "unknown", never clean."""
        submission = self.get_object()
        ledger = submission_ledger(submission=submission)
        if ledger is None:
            ledger = {**not_computed("the submission has no paper"), "status": "no paper"}
        answer = {**ledger, **ledger_known(ledger), "submission": submission.pk}
        return Response(ProvenanceSerializer(answer).data)

    def _url(self, pk: int) -> str:
        return self.request.build_absolute_uri(reverse("api:submission-detail", args=[pk]))


def _upload_path(archive) -> Path:
    return Path(archive.temporary_file_path())


class AgentFilter(django_filters.FilterSet):
    team = django_filters.CharFilter(field_name="team__slug")
    model_family = django_filters.ChoiceFilter(choices=ModelFamily.choices)


class AgentViewSet(viewsets.ReadOnlyModelViewSet):
    """Registered agents. Filter with `team` (the team's slug) or `model_family`."""

    serializer_class = AgentSerializer
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    filterset_class = AgentFilter

    def get_queryset(self):
        return agents_visible_to(user=self.request.user, agents=agent_list())
