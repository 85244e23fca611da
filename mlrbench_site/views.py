from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from benchmark.selectors import catalogue_counts

from .health import health_report


def home_view(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html", {"counts": catalogue_counts()})


@never_cache
def healthz_view(request: HttpRequest) -> JsonResponse:
    healthy, checks = health_report()
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks},
        status=200 if healthy else 503,
    )
