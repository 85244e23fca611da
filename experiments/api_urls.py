"""The experiments API, mounted under /api/ (namespace `api`) by mlrbench_site/urls.py."""

from rest_framework.routers import SimpleRouter

from .apis import ExperimentRunViewSet

router = SimpleRouter()
router.register("experiments", ExperimentRunViewSet, basename="experiment")

urlpatterns = router.urls
