from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from benchmark.apis import TaskViewSet
from benchmark.submission_apis import AgentViewSet, SubmissionViewSet
from judging.urls import api_urlpatterns as judging_api_patterns
from leaderboard.apis import ExportAPIView, JudgmentViewSet, LeaderboardAPIView

from . import views

router = DefaultRouter()
router.register("tasks", TaskViewSet, basename="task")
router.register("submissions", SubmissionViewSet, basename="submission")
router.register("agents", AgentViewSet, basename="agent")
router.register("judgments", JudgmentViewSet, basename="judgment")

api_patterns = [
    path("", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("", include("reviews.api_urls")),
    path("", include("experiments.api_urls")),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("leaderboard/", LeaderboardAPIView.as_view(), name="leaderboard"),
    path("export/", ExportAPIView.as_view(), name="export"),
    *judging_api_patterns,
]

urlpatterns = [
    path("", views.home_view, name="home"),
    path("healthz", views.healthz_view, name="healthz"),
    path("", include("benchmark.urls")),
    path("", include("reviews.urls")),
    path("", include("experiments.urls")),
    path("", include("judging.urls")),
    path("api/", include((api_patterns, "api"))),
    path("", include("leaderboard.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
]
