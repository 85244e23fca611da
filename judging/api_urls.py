"""Judging's API, mounted under /api/ (namespace `api`) by mlrbench_site/urls.py."""

from django.urls import path

from . import apis

urlpatterns = [
    path(
        "submissions/<int:submission_id>/judgments/",
        apis.SubmissionJudgmentsAPIView.as_view(),
        name="submission-judgments",
    ),
    path(
        "judgments/<int:judgment_id>/rerun/",
        apis.JudgmentRerunAPIView.as_view(),
        name="judgment-rerun",
    ),
]
