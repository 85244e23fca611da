"""The agent runs' API, mounted under /api/ (namespace `api`) by mlrbench_site/urls.py."""

from django.urls import path

from . import apis

urlpatterns = [
    path("agent-runs/", apis.AgentRunListAPIView.as_view(), name="agent-run-list"),
    path("agent-runs/<int:run_id>/", apis.AgentRunDetailAPIView.as_view(), name="agent-run-detail"),
    path(
        "agent-runs/<int:run_id>/cancel/",
        apis.AgentRunCancelAPIView.as_view(),
        name="agent-run-cancel",
    ),
]
