from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import APIRootView
from rest_framework.urlpatterns import format_suffix_patterns

from benchmark import api_urls as benchmark_api
from benchmark.views import SignInView, sign_in_elsewhere_view
from experiments import api_urls as experiments_api
from leaderboard import api_urls as leaderboard_api
from submissions import api_urls as submissions_api

from . import views

# /api/ lists the viewsets of every app's router, as one router's root would.
api_root = APIRootView.as_view(
    api_root_dict={
        prefix: f"{basename}-list"
        for router in (
            benchmark_api.router,
            submissions_api.router,
            leaderboard_api.router,
            experiments_api.router,
        )
        for prefix, _viewset, basename in router.registry
    }
)

# Each app's API once, under /api/ in the namespace `api`.
api_patterns = [
    *format_suffix_patterns([path("", api_root, name="api-root")]),
    path("", include("benchmark.api_urls")),
    path("", include("submissions.api_urls")),
    path("", include("leaderboard.api_urls")),
    path("", include("experiments.api_urls")),
    path("", include("judging.api_urls")),
    path("", include("reviews.api_urls")),
    path("", include("agent_runs.api_urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", views.api_docs_view, name="docs"),
]

urlpatterns = [
    path("", views.home_view, name="home"),
    path("healthz", views.healthz_view, name="healthz"),
    # Browsers ask for /favicon.ico whatever the page's <link> says.
    path("favicon.ico", views.favicon_view),
    path("", include("benchmark.urls")),
    path("", include("submissions.urls")),
    path("", include("reviews.urls")),
    path("", include("experiments.urls")),
    path("", include("judging.urls")),
    path("", include("agent_runs.urls")),
    path("api/", include((api_patterns, "api"))),
    path("", include("leaderboard.urls")),
    path("admin/login/", sign_in_elsewhere_view, {"default_next": "admin:index"}),
    path("admin/", admin.site.urls),
    # One sign-in for the site: reviewers land on their queue (reviews/views.py).
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
]

handler404 = "mlrbench_site.views.not_found_view"
