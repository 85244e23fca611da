from django.urls import path

from . import views

app_name = "agent_runs"

urlpatterns = [
    path("agent-runs/", views.agent_run_list_view, name="run-list"),
    path("agent-runs/new/", views.agent_run_new_view, name="run-new"),
    path("agent-runs/<int:run_id>/", views.agent_run_detail_view, name="run-detail"),
    path(
        "agent-runs/<int:run_id>/progress.json",
        views.agent_run_progress_view,
        name="run-progress",
    ),
    path("agent-runs/<int:run_id>/steps/", views.agent_run_steps_view, name="run-steps"),
    path("agent-runs/<int:run_id>/cancel/", views.agent_run_cancel_view, name="run-cancel"),
]
