"""The public read-only API, mounted under /api/ (namespace `api`) by
mlrbench_site/urls.py."""

from django.urls import path

from common.drf import AppRouter

from .apis import (
    AgentCompareAPIView,
    ExportAPIView,
    FabricationAPIView,
    JudgeBoardAPIView,
    JudgmentViewSet,
    LeaderboardAPIView,
    ReleaseAPIView,
    ReleaseExportAPIView,
    ReleaseFileAPIView,
)

router = AppRouter()
router.register("judgments", JudgmentViewSet, basename="judgment")

urlpatterns = [
    *router.urls,
    path("leaderboard/", LeaderboardAPIView.as_view(), name="leaderboard"),
    path("leaderboard/compare/", AgentCompareAPIView.as_view(), name="leaderboard-compare"),
    path("judges/leaderboard/", JudgeBoardAPIView.as_view(), name="judges-leaderboard"),
    path("export/", ExportAPIView.as_view(), name="export"),
    path("fabrication/", FabricationAPIView.as_view(), name="fabrication"),
    path("releases/<str:name>/", ReleaseAPIView.as_view(), name="release"),
    path("releases/<str:name>/export.zip", ReleaseExportAPIView.as_view(), name="release-export"),
    path("releases/<str:name>/files/<str:file>", ReleaseFileAPIView.as_view(), name="release-file"),
]
