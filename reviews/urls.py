from django.contrib.auth import views as auth_views
from django.urls import path

from benchmark.views import sign_in_elsewhere_view

from . import views

app_name = "reviews"

urlpatterns = [
    path("reviews/", views.queue_view, name="queue"),
    # One sign-in page for the site (benchmark/views.py); this address stays.
    path(
        "reviews/login/",
        sign_in_elsewhere_view,
        {"default_next": "reviews:queue"},
        name="login",
    ),
    path("reviews/logout/", auth_views.LogoutView.as_view(next_page="home"), name="logout"),
    path("reviews/papers/<str:code>/", views.paper_view, name="paper"),
    # Relative links in a paper (figures, code) resolve under the paper's blind URL.
    path("reviews/papers/<str:code>/<path:path>", views.paper_file_view, name="paper-file"),
    path("reviews/drafts/<str:code>", views.draft_view, name="draft"),
    path("reviews/rounds/", views.rounds_view, name="rounds"),
    path("reviews/rounds/<int:pk>/", views.round_view, name="round"),
    path("reviews/rounds/<int:pk>/assign/", views.round_assign_view, name="round-assign"),
    path(
        "reviews/rounds/<int:pk>/assignments/add/",
        views.round_assignment_add_view,
        name="round-assignment-add",
    ),
    path(
        "reviews/rounds/<int:pk>/assignments/<int:assignment_pk>/remove/",
        views.round_assignment_remove_view,
        name="round-assignment-remove",
    ),
    path(
        "reviews/rounds/<int:pk>/assignments/<int:assignment_pk>/due/",
        views.round_assignment_due_view,
        name="round-assignment-due",
    ),
    path("reviews/rounds/<int:pk>/remind/", views.round_remind_view, name="round-remind"),
    path("reviews/rounds/<int:pk>/close/", views.round_close_view, name="round-close"),
    path("reviews/rounds/<int:pk>/release/", views.round_release_view, name="round-release"),
    path("reviews/export.csv", views.export_view, name="export"),
    path("agreement/", views.agreement_view, name="agreement"),
]
