from django.urls import path

from . import views

app_name = "benchmark"

urlpatterns = [
    path("tasks/", views.task_list_view, name="task-list"),
    path("tasks/<slug:slug>/", views.task_detail_view, name="task-detail"),
]
