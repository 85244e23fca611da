from django.urls import path

from . import views

app_name = "leaderboard"

urlpatterns = [
    path("leaderboard/", views.leaderboard_view, name="leaderboard"),
    path("fabrication/", views.fabrication_view, name="fabrication"),
    path("leaderboard/compare/", views.agents_compare_view, name="compare"),
    path("judges/", views.judges_view, name="judges"),
    path("releases/", views.releases_view, name="releases"),
    path("releases/<str:name>/", views.release_detail_view, name="release-detail"),
    path("releases/<str:a>/diff/<str:b>/", views.releases_diff_view, name="releases-diff"),
    path("agents/<str:name>/", views.agent_detail_view, name="agent-detail"),
    path("tasks/<slug:slug>/results/", views.task_results_view, name="task-results"),
    path("submissions/<int:pk>/scores/", views.submission_scores_view, name="submission-scores"),
]
