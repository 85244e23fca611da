from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from benchmark.apis import TaskViewSet
from judging.urls import api_urlpatterns as judging_api_patterns

from . import views

router = DefaultRouter()
router.register("tasks", TaskViewSet, basename="task")

api_patterns = [
    path("", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    *judging_api_patterns,
]

urlpatterns = [
    path("", views.home_view, name="home"),
    path("healthz", views.healthz_view, name="healthz"),
    path("", include("benchmark.urls")),
    path("", include("judging.urls")),
    path("api/", include((api_patterns, "api"))),
    path("admin/", admin.site.urls),
]
