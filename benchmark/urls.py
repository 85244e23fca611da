from django.urls import path

from . import submission_views, views

app_name = "benchmark"

urlpatterns = [
    path("tasks/", views.task_list_view, name="task-list"),
    path("tasks/<slug:slug>/", views.task_detail_view, name="task-detail"),
    # Submissions: upload, pages, files (benchmark/submission_views.py).
    path("submissions/", submission_views.submission_list_view, name="submission-list"),
    path("submissions/new/", submission_views.submission_upload_view, name="submission-upload"),
    path(
        "submissions/<int:submission_id>/",
        submission_views.submission_detail_view,
        name="submission-detail",
    ),
    path(
        "submissions/<int:submission_id>/files/<path:path>",
        submission_views.artifact_detail_view,
        name="artifact-detail",
    ),
    path(
        "submissions/<int:submission_id>/raw/<path:path>",
        submission_views.artifact_raw_view,
        name="artifact-raw",
    ),
    path(
        "submissions/<int:submission_id>/trace/<path:path>",
        submission_views.trace_view,
        name="trace",
    ),
    # The agent's profile with its scores lives on the leaderboard at /agents/<name>/.
    path("agents/<str:name>/submissions/", submission_views.agent_detail_view, name="agent-detail"),
    path("account/", submission_views.account_view, name="account"),
    path("account/teams/", submission_views.team_create_view, name="team-create"),
    path("account/agents/", submission_views.agent_register_view, name="agent-register"),
    path("account/tokens/", submission_views.token_create_view, name="token-create"),
    path(
        "account/tokens/<int:token_id>/revoke/",
        submission_views.token_revoke_view,
        name="token-revoke",
    ),
]
