from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from benchmark.apis import TaskViewSet
from benchmark.experiments.apis import ExperimentRunViewSet

from . import views

router = DefaultRouter()
router.register("tasks", TaskViewSet, basename="task")
router.register("experiments", ExperimentRunViewSet, basename="experiment")

api_patterns = [
    path("", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
]

urlpatterns = [
    path("", views.home_view, name="home"),
    path("healthz", views.healthz_view, name="healthz"),
    path("", include("benchmark.urls")),
    path("", include("benchmark.experiments.urls")),
    path("api/", include((api_patterns, "api"))),
    path("admin/", admin.site.urls),
]
