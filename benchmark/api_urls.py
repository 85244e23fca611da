"""The catalogue's and submissions' API, mounted under /api/ (namespace `api`)
by mlrbench_site/urls.py."""

from common.drf import AppRouter

from .apis import TaskViewSet
from .submission_apis import AgentViewSet, SubmissionViewSet

router = AppRouter()
router.register("tasks", TaskViewSet, basename="task")
router.register("submissions", SubmissionViewSet, basename="submission")
router.register("agents", AgentViewSet, basename="agent")

urlpatterns = router.urls
