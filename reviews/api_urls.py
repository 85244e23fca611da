from django.urls import path

from . import apis

urlpatterns = [
    path("agreement/", apis.AgreementApi.as_view(), name="agreement"),
    path("reviews/assignments/", apis.MyAssignmentsApi.as_view(), name="review-assignments"),
    path(
        "reviews/assignments/<str:code>/",
        apis.MyAssignmentApi.as_view(),
        name="review-assignment",
    ),
    path(
        "reviews/assignments/<str:code>/draft/",
        apis.ReviewDraftApi.as_view(),
        name="review-draft",
    ),
    path(
        "reviews/assignments/<str:code>/review/",
        apis.ReviewSubmitApi.as_view(),
        name="review-submit",
    ),
    path(
        "reviews/rounds/<int:pk>/assignments/",
        apis.RoundAssignmentsApi.as_view(),
        name="review-round-assignments",
    ),
    path("reviews/export/", apis.ReviewExportApi.as_view(), name="review-export"),
]
