"""The experiments API, mounted under /api/ (namespace `api`) by mlrbench_site/urls.py."""

from django.urls import path

from common.drf import AppRouter

from .apis import ExperimentRunViewSet, ObjectiveAnalysesView, ObjectiveTaskViewSet

router = AppRouter()
router.register("experiments", ExperimentRunViewSet, basename="experiment")
router.register("objective/tasks", ObjectiveTaskViewSet, basename="objective-task")

urlpatterns = [
    path("objective/analyses/", ObjectiveAnalysesView.as_view(), name="objective-analyses"),
    *router.urls,
]
