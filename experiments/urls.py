from django.urls import path

from . import views

app_name = "experiments"

urlpatterns = [
    path("experiments/", views.experiment_run_list_view, name="run-list"),
    path("experiments/<int:pk>/", views.experiment_run_detail_view, name="run-detail"),
    path("experiments/<int:pk>/log", views.experiment_run_log_view, name="run-log"),
]
