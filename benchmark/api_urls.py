"""The catalogue's API, mounted under /api/ (namespace `api`) by mlrbench_site/urls.py."""

from common.drf import AppRouter

from .apis import TaskViewSet

router = AppRouter()
router.register("tasks", TaskViewSet, basename="task")

urlpatterns = router.urls
