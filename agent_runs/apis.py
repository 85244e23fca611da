"""MLR-Agent runs over the REST API, for organisers: start runs, follow one
(with its transcript from step `after` on), cancel one. Errors have the site's
one shape; the service's messages are the form's."""

from __future__ import annotations

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchmark.roles import IsOrganiser
from common.errors import NotFound, ValidationFailed

from . import selectors
from .models import AgentRun
from .serializers import (
    AgentRunCreateSerializer,
    AgentRunProgressSerializer,
    AgentRunSerializer,
    agent_run_progress_data,
    run_arguments,
)
from .services import agent_run_cancel, agent_run_create


def _run(run_id: int) -> AgentRun:
    run = selectors.agent_run_with_stages(run_id=run_id)
    if run is None:
        raise NotFound(f"no agent run {run_id}")
    return run


class AgentRunListAPIView(APIView):
    """POST: one run per task, validated before anything is queued."""

    permission_classes = [IsOrganiser]

    @extend_schema(
        request=AgentRunCreateSerializer,
        responses={
            201: AgentRunSerializer(many=True),
            400: OpenApiResponse(description="Bad input"),
        },
    )
    def post(self, request: Request) -> Response:
        serializer = AgentRunCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        user = request.user if isinstance(request.user, User) else None
        runs = agent_run_create(**run_arguments(serializer.validated_data), requested_by=user)
        runs = [_run(run.pk) for run in runs]
        return Response(AgentRunSerializer(runs, many=True).data, status=status.HTTP_201_CREATED)


class AgentRunDetailAPIView(APIView):
    """GET: the run, its stages, the cost so far and the transcript from step `after` on."""

    permission_classes = [IsOrganiser]

    @extend_schema(
        parameters=[OpenApiParameter("after", int, description="the first step wanted")],
        responses=AgentRunProgressSerializer,
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = _run(run_id)
        try:
            after = max(0, int(request.query_params.get("after") or 0))
        except ValueError:
            raise ValidationFailed("after must be a whole number of steps", field="after") from None
        transcript = selectors.agent_run_transcript(run=run, after=after)
        return Response(agent_run_progress_data(run, transcript))


class AgentRunCancelAPIView(APIView):
    """POST: stop the run (a running stage stops at its next call or command)."""

    permission_classes = [IsOrganiser]

    @extend_schema(request=None, responses={202: AgentRunSerializer})
    def post(self, request: Request, run_id: int) -> Response:
        run = agent_run_cancel(
            run=_run(run_id), reason=f"cancelled by {request.user.get_username()}"
        )
        return Response(AgentRunSerializer(_run(run.pk)).data, status=status.HTTP_202_ACCEPTED)
