"""Judging's REST endpoints: a submission's judgments (what the page polls) and
the organiser's re-run."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchmark.roles import IsOrganiser, IsOrganiserOrReadOnly
from common.errors import Conflict, ErrorItem
from submissions.models import Submission
from submissions.visibility import submissions_visible_to

from .selectors import submission_judgments_status
from .serializers import (
    JudgmentStatusSerializer,
    QueueConflictSerializer,
    QueueResultSerializer,
    SubmissionJudgmentsSerializer,
)
from .services.queue import judgment_rerun, judgments_queue


class SubmissionJudgmentsAPIView(APIView):
    """GET: each judge's progress and scores for one submission, and the stage score.
    POST (organisers): queue the submission for every active judge that has not judged it
    (and again for those that failed)."""

    permission_classes = [IsOrganiserOrReadOnly]

    @extend_schema(responses=SubmissionJudgmentsSerializer)
    def get(self, request: Request, submission_id: int) -> Response:
        submissions = submissions_visible_to(
            user=request.user, submissions=Submission.objects.select_related("task")
        )
        submission = get_object_or_404(submissions, pk=submission_id)
        return Response(SubmissionJudgmentsSerializer(submission_judgments_status(submission)).data)

    @extend_schema(
        request=None,
        responses={
            202: QueueResultSerializer,
            409: OpenApiResponse(
                QueueConflictSerializer,
                description="Nothing was queued: an error per skipped reason, and the counts.",
            ),
        },
    )
    def post(self, request: Request, submission_id: int) -> Response:
        submission = get_object_or_404(Submission, pk=submission_id)
        report = judgments_queue(submissions=[submission])
        data = QueueResultSerializer(report).data
        if not report.judgment_ids and report.skipped:
            items = [ErrorItem(code="nothing_queued", message=reason) for reason in report.skipped]
            raise Conflict(items=items, extra=data)
        return Response(data, status=status.HTTP_202_ACCEPTED)


class JudgmentRerunAPIView(APIView):
    """POST (organisers): queue a failed judgment again."""

    permission_classes = [IsOrganiser]

    @extend_schema(
        request=None,
        responses={
            202: JudgmentStatusSerializer,
            404: OpenApiResponse(description="No such judgment."),
            409: OpenApiResponse(description="Only a failed judgment can be re-run."),
        },
    )
    def post(self, request: Request, judgment_id: int) -> Response:
        judgment = judgment_rerun(judgment_id=judgment_id)
        return Response(
            {"id": judgment.pk, "judge": judgment.judge.name, "status": judgment.status},
            status=status.HTTP_202_ACCEPTED,
        )
