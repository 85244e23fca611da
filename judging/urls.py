from django.urls import path

from . import views

app_name = "judging"

urlpatterns = [
    path(
        "submissions/<int:submission_id>/judgments/",
        views.submission_judgments_view,
        name="submission-judgments",
    ),
    path(
        "submissions/<int:submission_id>/judgments/panel/",
        views.submission_judgments_panel_view,
        name="submission-judgments-panel",
    ),
    path(
        "submissions/<int:submission_id>/judge-now/",
        views.submission_judge_now_view,
        name="submission-judge-now",
    ),
    path("judgments/<int:judgment_id>/rerun/", views.judgment_rerun_view, name="judgment-rerun"),
]
