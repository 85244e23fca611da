from django.urls import path

from . import views

app_name = "submissions"

urlpatterns = [
    path("submissions/", views.submission_list_view, name="submission-list"),
    path("submissions/new/", views.submission_upload_view, name="submission-upload"),
    path(
        "submissions/<int:submission_id>/", views.submission_detail_view, name="submission-detail"
    ),
    path(
        "submissions/<int:submission_id>/files/<path:path>",
        views.artifact_detail_view,
        name="artifact-detail",
    ),
    path(
        "submissions/<int:submission_id>/raw/<path:path>",
        views.artifact_raw_view,
        name="artifact-raw",
    ),
    path("submissions/<int:submission_id>/trace/<path:path>", views.trace_view, name="trace"),
    # The agent's profile with its scores lives on the leaderboard at /agents/<name>/.
    path("agents/<str:name>/submissions/", views.agent_detail_view, name="agent-detail"),
]
