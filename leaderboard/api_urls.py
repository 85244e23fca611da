"""The public read-only API, mounted under /api/ (namespace `api`) by
mlrbench_site/urls.py."""

from django.urls import path

from common.drf import AppRouter

from .apis import ExportAPIView, FabricationAPIView, JudgmentViewSet, LeaderboardAPIView

router = AppRouter()
router.register("judgments", JudgmentViewSet, basename="judgment")

urlpatterns = [
    *router.urls,
    path("leaderboard/", LeaderboardAPIView.as_view(), name="leaderboard"),
    path("export/", ExportAPIView.as_view(), name="export"),
    path("fabrication/", FabricationAPIView.as_view(), name="fabrication"),
]
