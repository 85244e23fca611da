"""The submissions' and agents' API, mounted under /api/ (namespace `api`) by
mlrbench_site/urls.py."""

from common.drf import AppRouter

from .apis import AgentViewSet, SubmissionViewSet

router = AppRouter()
router.register("submissions", SubmissionViewSet, basename="submission")
router.register("agents", AgentViewSet, basename="agent")

urlpatterns = router.urls
