from django.urls import path

from . import views

app_name = "benchmark"

urlpatterns = [
    path("tasks/", views.task_list_view, name="task-list"),
    path("tasks/<slug:slug>/", views.task_detail_view, name="task-detail"),
    path("account/", views.account_view, name="account"),
    path("account/teams/", views.team_create_view, name="team-create"),
    path("account/agents/", views.agent_register_view, name="agent-register"),
    path("account/tokens/", views.token_create_view, name="token-create"),
    path("account/tokens/<int:token_id>/revoke/", views.token_revoke_view, name="token-revoke"),
]
