"""REST API of human review: the public agreement statistics, a reviewer's
own assignments (blind until they submit), drafts and review submission,
and for organisers a round's assignments and the CSV export."""

from dataclasses import replace

from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import permissions, renderers, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from benchmark.roles import IsOrganiser, IsReviewer
from common.errors import ErrorItem, ValidationFailed
from common.http import signed_in_user
from submissions.models import Stage

from . import selectors, services
from .forms import (
    HALLUCINATION_QUESTIONS,
    hallucination_evidence_field_name,
    hallucination_field_name,
    score_field_name,
)
from .models import Assignment, ReviewRound, ReviewStatus
from .serializers import (
    AssignmentDetailSerializer,
    AssignmentListSerializer,
    AssignmentSerializer,
    DraftSavedSerializer,
    RoundAssignmentsSerializer,
    StageAgreementSerializer,
)
from .views import reviews_csv_response


class AgreementApi(APIView):
    """Agreement between expert reviewers and the LLM judges, per dimension
    of the stage's rubric: the mean of the judges, or one judge (`judge`)."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        parameters=[
            OpenApiParameter("stage", str, enum=Stage.values, default=Stage.END2END),
            OpenApiParameter("judge", str, description="a judge's name; empty: mean of judges"),
            OpenApiParameter(
                "reviews",
                str,
                enum=["released", "submitted"],
                default="released",
                description="released reviews only (public); `submitted`: every submitted "
                "review (organisers only; others get the released ones)",
            ),
        ],
        responses={200: StageAgreementSerializer},
    )
    def get(self, request: Request) -> Response:
        stage = request.query_params.get("stage") or Stage.END2END
        judge = request.query_params.get("judge") or None
        reviews = selectors.agreement_reviews_for(request.user, request.query_params.get("reviews"))
        result = selectors.agreement_for_stage(stage=stage, judge=judge, reviews=reviews)
        return Response(StageAgreementSerializer(result).data)


def _own(request: Request, code: str) -> Assignment:
    try:
        return selectors.assignment_of_reviewer(user=signed_in_user(request.user), code=code)
    except Assignment.DoesNotExist as exc:
        raise Http404 from exc


class MyAssignmentsApi(APIView):
    """The signed-in reviewer's assignments, blind until their review is submitted."""

    permission_classes = [permissions.IsAuthenticated, IsReviewer]

    @extend_schema(
        operation_id="reviews_assignments_list", responses={200: AssignmentListSerializer}
    )
    def get(self, request: Request) -> Response:
        assignments = selectors.reviewer_assignments(user=signed_in_user(request.user))
        states = [selectors.assignment_state(assignment=a) for a in assignments]
        return Response(
            AssignmentListSerializer({"results": states}, context={"request": request}).data
        )


class MyAssignmentApi(APIView):
    """One of the reviewer's assignments with the rubric and the paper's files (blind paths)."""

    permission_classes = [permissions.IsAuthenticated, IsReviewer]

    @extend_schema(responses={200: AssignmentDetailSerializer})
    def get(self, request: Request, code: str) -> Response:
        state = selectors.assignment_state(assignment=_own(request, code), detail=True)
        return Response(AssignmentDetailSerializer(state, context={"request": request}).data)


_REVIEW_INPUT = inline_serializer(
    "ReviewInput",
    {
        "scores": serializers.DictField(child=serializers.IntegerField()),
        "confidence": serializers.IntegerField(min_value=1, max_value=5),
        "strengths": serializers.CharField(),
        "weaknesses": serializers.CharField(),
        "comments": serializers.CharField(required=False, allow_blank=True),
        "hallucination": serializers.DictField(
            required=False,
            help_text='Experiment and end2end rounds: `{type: {"answer": yes | no | '
            'not_sure, "evidence": text}}` for each of the four hallucination types.',
        ),
    },
)


def _form_data(request: Request, rubric_keys: list[str]) -> tuple[dict, list[ErrorItem]]:
    """The JSON body as the review form's fields, and errors about its shape."""
    body = request.data if isinstance(request.data, dict) else {}
    scores = body.get("scores") or {}
    errors: list[ErrorItem] = []
    if not isinstance(scores, dict):
        message = "scores must be an object {dimension: score}"
        errors.append(ErrorItem(code="invalid", message=message, field="scores"))
        scores = {}
    unknown = sorted(set(scores) - set(rubric_keys))
    if unknown:
        message = f"unknown dimension(s): {', '.join(map(str, unknown))}"
        errors.append(ErrorItem(code="unknown_dimension", message=message, field="scores"))
    data = {score_field_name(key): scores.get(key) for key in rubric_keys}
    for name in ("confidence", "strengths", "weaknesses", "comments"):
        data[name] = body.get(name)
    checks = body.get("hallucination") or {}
    for kind in HALLUCINATION_QUESTIONS if isinstance(checks, dict) else ():
        entry = checks.get(kind)
        entry = entry if isinstance(entry, dict) else {"answer": entry}
        data[hallucination_field_name(kind)] = entry.get("answer")
        data[hallucination_evidence_field_name(kind)] = entry.get("evidence")
    return {k: ("" if v is None else v) for k, v in data.items()}, errors


def _rubric_keys(assignment: Assignment) -> list[str]:
    review = selectors.review_of_assignment(assignment)
    rubric = (
        review.rubric
        if review and review.rubric_id
        else selectors.rubric_for_stage(assignment.review_round.stage)
    )
    return rubric.dimension_keys if rubric else []


def _api_fields(error: services.ReviewInvalid) -> ValidationFailed:
    """The review form's field names back to the API's: `score_Novelty` is `scores.Novelty`."""
    items = [
        replace(item, field=f"scores.{item.field.removeprefix('score_')}")
        if item.field and item.field.startswith("score_")
        else replace(item, field=f"hallucination.{item.field.removeprefix('hallucination_')}")
        if item.field and item.field.startswith("hallucination_")
        else item
        for item in error.items
    ]
    return ValidationFailed(items=items)


class ReviewDraftApi(APIView):
    """Save what the reviewer has typed so far (any subset of the review's fields)."""

    permission_classes = [permissions.IsAuthenticated, IsReviewer]

    @extend_schema(request=_REVIEW_INPUT, responses={200: DraftSavedSerializer})
    def put(self, request: Request, code: str) -> Response:
        assignment = _own(request, code)
        data, _errors = _form_data(request, _rubric_keys(assignment))
        review = services.review_draft_save(
            assignment=assignment, data={k: v for k, v in data.items() if v != ""}
        )
        saved = {"saved_at": review.draft_saved_at or review.updated_at, "draft": review.draft}
        return Response(DraftSavedSerializer(saved).data)

    post = put


class ReviewSubmitApi(APIView):
    """Submit the review, or edit it after submitting until the assignment closes."""

    permission_classes = [permissions.IsAuthenticated, IsReviewer]

    @extend_schema(
        request=_REVIEW_INPUT, responses={200: AssignmentSerializer, 201: AssignmentSerializer}
    )
    def post(self, request: Request, code: str) -> Response:
        assignment = _own(request, code)
        data, errors = _form_data(request, _rubric_keys(assignment))
        if errors:
            raise ValidationFailed(items=errors)
        first = not (
            (review := selectors.review_of_assignment(assignment))
            and review.status == ReviewStatus.SUBMITTED
        )
        try:
            services.review_submit(assignment=assignment, data=data)
        except services.ReviewInvalid as exc:
            raise _api_fields(exc) from None
        assignment.refresh_from_db()
        state = selectors.assignment_state(assignment=assignment)
        return Response(
            AssignmentSerializer(state, context={"request": request}).data,
            status=status.HTTP_201_CREATED if first else status.HTTP_200_OK,
        )

    put = post


class RoundAssignmentsApi(APIView):
    """Every assignment of a round, with who reviews what and whether they submitted."""

    permission_classes = [permissions.IsAuthenticated, IsOrganiser]

    @extend_schema(responses={200: RoundAssignmentsSerializer})
    def get(self, request: Request, pk: int) -> Response:
        review_round = get_object_or_404(ReviewRound, pk=pk)
        progress = selectors.round_progress(review_round=review_round)
        answer = {
            "round": review_round,
            "n_submitted": progress.n_submitted,
            "n_total": progress.n_total,
            "assignments": progress.assignments,
        }
        return Response(RoundAssignmentsSerializer(answer).data)


class _CsvRenderer(renderers.BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data


class ReviewExportApi(APIView):
    """Submitted reviews of a stage as CSV in human_review.csv's columns, reviewers numbered."""

    permission_classes = [permissions.IsAuthenticated, IsOrganiser]
    renderer_classes = [renderers.JSONRenderer, _CsvRenderer]

    @extend_schema(
        parameters=[OpenApiParameter("stage", str, enum=Stage.values, default=Stage.END2END)],
        responses={(200, "text/csv"): OpenApiTypes.STR},
    )
    def get(self, request: Request):
        stage = request.query_params.get("stage") or Stage.END2END
        if stage not in Stage.values:
            raise ValidationFailed(f"unknown stage {stage!r}", code="invalid_choice", field="stage")
        return reviews_csv_response(stage)
