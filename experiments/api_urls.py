"""The experiments API, mounted under /api/ (namespace `api`) by mlrbench_site/urls.py."""

from common.drf import AppRouter

from .apis import ExperimentRunViewSet

router = AppRouter()
router.register("experiments", ExperimentRunViewSet, basename="experiment")

urlpatterns = router.urls
